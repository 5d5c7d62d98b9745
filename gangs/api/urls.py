"""OpenPAI routes of the portal's API (docs/openpai.md, docs/api.md): a multi-task job's roles x
tasks and attempts, its resubmit, and the config a job was submitted from."""

from django.urls import re_path

from core.api.urls import PORTAL
from gangs.api.views import GangDetailView, GangResubmitView, JobOpenPaiView

ID = r"(?P<job_id>[^/]+)"

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
]
