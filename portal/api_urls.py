"""REST API routes (GPULab v4.0 under gpulab/v4.0/, portal endpoints beside them).

Every route takes an optional trailing slash: the gpulab-cli asks for ``jobs`` and ``jobs/ID``,
people with curl often add a "/". See docs/api.md.
"""

from django.urls import re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from clusters.api.views import ClusterListView, SlaveListView
from jobs.api.array import JobArrayView
from jobs.api.gang import GangDetailView
from jobs.api.views import (
    ConvertView,
    JobDebugView,
    JobDetailView,
    JobExplainView,
    JobListView,
    JobLogView,
    JobOpenPaiView,
    JobStatusView,
)
from portal.api.views import MeView, ProjectListView, TokenView, VersionView
from reservations.api.views import ReservationDetailView, ReservationListView

GPULAB = r"^gpulab/v4\.0/"
PORTAL = r"^portal/"
ID = r"(?P<job_id>[^/]+)"

urlpatterns = [
    # GPULab v4.0 (docs/gpulab-format.md, section 4).
    re_path(GPULAB + r"version/?$", VersionView.as_view(), name="gpulab-version"),
    re_path(GPULAB + r"jobs/?$", JobListView.as_view(), name="gpulab-jobs"),
    re_path(GPULAB + rf"jobs/{ID}/?$", JobDetailView.as_view(), name="gpulab-job-detail"),
    re_path(
        GPULAB + rf"jobs/{ID}/state/status/?$", JobStatusView.as_view(), name="gpulab-job-status"
    ),
    re_path(GPULAB + rf"jobs/{ID}/log/?$", JobLogView.as_view(), name="gpulab-job-log"),
    re_path(GPULAB + rf"jobs/{ID}/debug/?$", JobDebugView.as_view(), name="gpulab-job-debug"),
    re_path(GPULAB + r"clusters/?$", ClusterListView.as_view(), name="gpulab-clusters"),
    re_path(GPULAB + r"slaves/?$", SlaveListView.as_view(), name="gpulab-slaves"),
    # Portal endpoints (never inside GPULab's objects).
    re_path(PORTAL + r"convert/?$", ConvertView.as_view(), name="api-convert"),
    re_path(PORTAL + r"jobs/array/?$", JobArrayView.as_view(), name="api-jobs-array"),
    re_path(PORTAL + rf"jobs/{ID}/explain/?$", JobExplainView.as_view(), name="api-job-explain"),
    re_path(PORTAL + rf"jobs/{ID}/openpai/?$", JobOpenPaiView.as_view(), name="api-job-openpai"),
    re_path(
        PORTAL + r"gangs/(?P<gang_id>[^/]+)/?$", GangDetailView.as_view(), name="api-gang-detail"
    ),
    re_path(PORTAL + r"reservations/?$", ReservationListView.as_view(), name="api-reservations"),
    re_path(
        PORTAL + r"reservations/(?P<reservation_id>[^/]+)/?$",
        ReservationDetailView.as_view(),
        name="api-reservation-detail",
    ),
    re_path(PORTAL + r"projects/?$", ProjectListView.as_view(), name="api-projects"),
    re_path(PORTAL + r"me/?$", MeView.as_view(), name="api-me"),
    re_path(PORTAL + r"token/?$", TokenView.as_view(), name="api-token"),
    # OpenAPI schema and Swagger UI (served from drf-spectacular-sidecar, no CDN). No Redoc:
    # drf-spectacular's Redoc page loads Google fonts.
    re_path(r"^schema/?$", SpectacularAPIView.as_view(), name="api-schema"),
    re_path(r"^docs/?$", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
]
