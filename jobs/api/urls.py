"""Job routes of the API: GPULab v4.0 jobs, clusters and slaves (with what the jobs use), and
the portal's job endpoints beside them."""

from django.urls import re_path

from core.api.urls import GPULAB, PORTAL
from jobs.api.clusters import ClusterListView, SlaveListView
from jobs.api.outputs import (
    JobOutputDownloadView,
    JobOutputListView,
    JobShareDetailView,
    JobShareListView,
)
from jobs.api.quota_standing import QuotaStandingView
from jobs.api.views import (
    ClusterUtilisationView,
    ConvertView,
    JobArrayView,
    JobDebugView,
    JobDetailView,
    JobExplainView,
    JobListView,
    JobLogView,
    JobMetricsView,
    JobStatusView,
)

ID = r"(?P<job_id>[^/]+)"

urlpatterns = [
    # GPULab v4.0 (docs/gpulab-format.md, section 4).
    re_path(GPULAB + r"jobs/?$", JobListView.as_view(), name="gpulab-jobs"),
    re_path(GPULAB + rf"jobs/{ID}/?$", JobDetailView.as_view(), name="gpulab-job-detail"),
    re_path(
        GPULAB + rf"jobs/{ID}/state/status/?$", JobStatusView.as_view(), name="gpulab-job-status"
    ),
    re_path(GPULAB + rf"jobs/{ID}/log/?$", JobLogView.as_view(), name="gpulab-job-log"),
    re_path(GPULAB + rf"jobs/{ID}/debug/?$", JobDebugView.as_view(), name="gpulab-job-debug"),
    # Clusters and slaves with what their jobs use (jobs/api/clusters.py).
    re_path(GPULAB + r"clusters/?$", ClusterListView.as_view(), name="gpulab-clusters"),
    re_path(GPULAB + r"slaves/?$", SlaveListView.as_view(), name="gpulab-slaves"),
    # Portal endpoints (never inside GPULab's objects).
    re_path(PORTAL + r"convert/?$", ConvertView.as_view(), name="api-convert"),
    re_path(PORTAL + r"quotas/standing/?$", QuotaStandingView.as_view(), name="api-quota-standing"),
    re_path(PORTAL + r"jobs/array/?$", JobArrayView.as_view(), name="api-jobs-array"),
    re_path(PORTAL + rf"jobs/{ID}/explain/?$", JobExplainView.as_view(), name="api-job-explain"),
    # Outputs and shares (jobs/execution/outputs.py, jobs/user_actions/shares.py); a job's
    # subscriptions are the notifications app's (notifications/api/urls.py).
    re_path(PORTAL + rf"jobs/{ID}/outputs/?$", JobOutputListView.as_view(), name="api-job-outputs"),
    re_path(
        PORTAL + rf"jobs/{ID}/outputs/download/?$",
        JobOutputDownloadView.as_view(),
        name="api-job-outputs-download",
    ),
    re_path(PORTAL + rf"jobs/{ID}/shares/?$", JobShareListView.as_view(), name="api-job-shares"),
    re_path(
        PORTAL + rf"jobs/{ID}/shares/(?P<share_id>[^/]+)/?$",
        JobShareDetailView.as_view(),
        name="api-job-share-detail",
    ),
    # Resource samples (jobs/execution/metrics.py, docs/metrics.md).
    re_path(PORTAL + rf"jobs/{ID}/metrics/?$", JobMetricsView.as_view(), name="api-job-metrics"),
    re_path(
        PORTAL + r"clusters/(?P<cluster_id>[0-9]{1,9})/utilisation/?$",
        ClusterUtilisationView.as_view(),
        name="api-cluster-utilisation",
    ),
]
