"""Job pages, the dashboard (home), the usage page and the Live pages."""

from django.urls import include, path

from jobs.user_actions.registry import ACTIONS as JOB_ACTIONS
from jobs.web import dashboard, live
from jobs.web import views as job_views

job_patterns = [
    path("", job_views.job_list, name="list"),
    path("new/", job_views.job_create, name="create"),
    path("new/convert", job_views.job_convert, name="convert"),
    path("bulk/", job_views.job_bulk, name="bulk"),
    path("<uuid:uuid>/", job_views.job_detail, name="detail"),
    path("<uuid:uuid>/live/", job_views.job_live, name="live"),
    path("<uuid:uuid>/log/", job_views.job_log, name="log"),
    path("<uuid:uuid>/log.txt", job_views.job_log_raw, name="log-raw"),
    path("<uuid:uuid>/outputs/download", job_views.job_output_download, name="outputs-download"),
    path("<uuid:uuid>/shares/", job_views.job_share_add, name="share-add"),
    path(
        "<uuid:uuid>/shares/<int:share_id>/revoke/",
        job_views.job_share_remove,
        name="share-revoke",
    ),
    *[
        path(f"<uuid:uuid>/{name}/", job_views.job_action, {"action": name}, name=name)
        for name in JOB_ACTIONS
    ],
]

# Live pages: clusters and slaves with their jobs and reservations (jobs/web/live.py).
live_patterns = [
    path("clusters/", live.cluster_list, name="clusters"),
    path("slaves/", live.slave_list, name="slaves"),
]

urlpatterns = [
    path("", dashboard.home, name="home"),
    path("usage/", dashboard.usage, name="usage"),
    path("jobs/", include((job_patterns, "jobs"))),
    path("live/", include((live_patterns, "live"))),
]
