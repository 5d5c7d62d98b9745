"""OpenPAI routes: the portal API's (a multi-task job's roles x tasks and attempts, its
resubmit, the config a job was submitted from; docs/api.md) and OpenPAI's own REST API
(``/api/v1/jobs``, ``/api/v2/jobs``...: gangs/api/openpai_views.py; docs/openpai.md)."""

from django.urls import re_path

from core.api.urls import PORTAL
from gangs.api.openpai_views import (
    V1JobSubmitView,
    V1UserJobSubmitView,
    V2JobDetailView,
    V2JobExecutionTypeView,
    V2JobsView,
)
from gangs.api.views import GangDetailView, GangResubmitView, JobOpenPaiView

ID = r"(?P<job_id>[^/]+)"
# OpenPAI names a job {user}~{jobName} (its "framework name").
FRAMEWORK = r"(?P<user>[^/~]+)~(?P<job_name>[^/]+)"

urlpatterns = [
    re_path(PORTAL + rf"jobs/{ID}/openpai/?$", JobOpenPaiView.as_view(), name="api-job-openpai"),
    re_path(
        PORTAL + r"gangs/(?P<gang_id>[^/]+)/?$", GangDetailView.as_view(), name="api-gang-detail"
    ),
    re_path(
        PORTAL + r"gangs/(?P<gang_id>[^/]+)/resubmit/?$",
        GangResubmitView.as_view(),
        name="api-gang-resubmit",
    ),
    # OpenPAI's REST API.
    re_path(r"^v1/jobs/?$", V1JobSubmitView.as_view(), name="openpai-v1-jobs"),
    re_path(
        r"^v1/user/(?P<user>[^/]+)/jobs/?$",
        V1UserJobSubmitView.as_view(),
        name="openpai-v1-user-jobs",
    ),
    re_path(r"^v2/jobs/?$", V2JobsView.as_view(), name="openpai-v2-jobs"),
    re_path(rf"^v2/jobs/{FRAMEWORK}/?$", V2JobDetailView.as_view(), name="openpai-v2-job"),
    re_path(
        rf"^v2/jobs/{FRAMEWORK}/executionType/?$",
        V2JobExecutionTypeView.as_view(),
        name="openpai-v2-job-execution-type",
    ),
]
