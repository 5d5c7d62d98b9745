"""Tapis v3 Jobs-shaped routes (docs/tapis.md) and the portal's own resubmit, under /api/.

Tapis clients put a base URL before ``/v3/...``: here it is ``<portal>/api/tapis``. Trailing
slashes are optional, as for every portal route.
"""

from django.urls import re_path

from tapis.api import (
    app_shares,
    job_hide_events,
    job_search,
    outputs,
    subscriptions,
    systems_files,
    views,
)

TAPIS = r"^tapis/v3/"
UUID = r"(?P<job_uuid>[^/]+)"
APP = r"(?P<app_id>[^/]+)"
SYSTEM = r"(?P<system_id>[^/]+)"

urlpatterns = [
    re_path(TAPIS + r"jobs/submit/?$", views.JobSubmitView.as_view(), name="tapis-jobs-submit"),
    re_path(TAPIS + r"jobs/list/?$", views.JobListView.as_view(), name="tapis-jobs-list"),
    # Before jobs/{uuid}: "search" is no uuid.
    re_path(
        TAPIS + r"jobs/search/?$", job_search.JobSearchView.as_view(), name="tapis-jobs-search"
    ),
    # A job's uuid (subscribe, list, delete all) or a subscription's (list it, delete it).
    re_path(
        TAPIS + rf"jobs/subscribe/{UUID}/?$",
        subscriptions.JobSubscribeView.as_view(),
        name="tapis-jobs-subscribe",
    ),
    re_path(TAPIS + rf"jobs/{UUID}/?$", views.JobDetailView.as_view(), name="tapis-job"),
    re_path(
        TAPIS + rf"jobs/{UUID}/status/?$", views.JobStatusView.as_view(), name="tapis-job-status"
    ),
    re_path(
        TAPIS + rf"jobs/{UUID}/history/?$",
        views.JobHistoryView.as_view(),
        name="tapis-job-history",
    ),
    re_path(
        TAPIS + rf"jobs/{UUID}/cancel/?$", views.JobCancelView.as_view(), name="tapis-job-cancel"
    ),
    re_path(
        TAPIS + rf"jobs/{UUID}/hide/?$",
        job_hide_events.JobHideView.as_view(),
        name="tapis-job-hide",
    ),
    re_path(
        TAPIS + rf"jobs/{UUID}/unhide/?$",
        job_hide_events.JobUnhideView.as_view(),
        name="tapis-job-unhide",
    ),
    re_path(
        TAPIS + rf"jobs/{UUID}/sendEvent/?$",
        job_hide_events.JobSendEventView.as_view(),
        name="tapis-job-send-event",
    ),
    re_path(
        TAPIS + rf"jobs/{UUID}/resubmit/?$",
        views.JobResubmitView.as_view(),
        name="tapis-job-resubmit",
    ),
    re_path(
        TAPIS + rf"jobs/{UUID}/resubmit_request/?$",
        views.JobResubmitRequestView.as_view(),
        name="tapis-job-resubmit-request",
    ),
    re_path(
        TAPIS + rf"jobs/{UUID}/output/list/(?P<output_path>.*)$",
        outputs.JobOutputListView.as_view(),
        name="tapis-job-output-list",
    ),
    re_path(
        TAPIS + rf"jobs/{UUID}/output/download/(?P<output_path>.*)$",
        outputs.JobOutputDownloadView.as_view(),
        name="tapis-job-output-download",
    ),
    re_path(
        TAPIS + rf"jobs/{UUID}/share/?$", outputs.JobShareView.as_view(), name="tapis-job-share"
    ),
    re_path(
        TAPIS + rf"jobs/{UUID}/share/(?P<grantee>[^/]+)/?$",
        outputs.JobUnshareView.as_view(),
        name="tapis-job-unshare",
    ),
    re_path(TAPIS + r"apps/?$", views.AppListView.as_view(), name="tapis-apps"),
    re_path(TAPIS + rf"apps/{APP}/?$", views.AppLatestView.as_view(), name="tapis-app"),
    re_path(
        TAPIS + rf"apps/{APP}/(?P<version>[^/]+)/share/?$",
        app_shares.AppShareView.as_view(),
        name="tapis-app-share",
    ),
    re_path(
        TAPIS + rf"apps/{APP}/(?P<version>[^/]+)/share/(?P<grantee>[^/]+)/?$",
        app_shares.AppUnshareView.as_view(),
        name="tapis-app-unshare",
    ),
    re_path(
        TAPIS + rf"apps/{APP}/(?P<version>[^/]+)/?$",
        views.AppVersionView.as_view(),
        name="tapis-app-version",
    ),
    re_path(TAPIS + r"systems/?$", systems_files.SystemListView.as_view(), name="tapis-systems"),
    re_path(
        TAPIS + rf"systems/{SYSTEM}/?$",
        systems_files.SystemDetailView.as_view(),
        name="tapis-system",
    ),
    # The path may be empty ("files/ops/portal-archive/" lists the top) and holds slashes.
    re_path(
        TAPIS + rf"files/ops/{SYSTEM}/(?P<path>.*)$",
        systems_files.FileListView.as_view(),
        name="tapis-files-list",
    ),
    re_path(
        TAPIS + rf"files/content/{SYSTEM}/(?P<path>.*)$",
        systems_files.FileContentView.as_view(),
        name="tapis-files-content",
    ),
    re_path(
        r"^portal/jobs/(?P<job_id>[^/]+)/resubmit/?$",
        views.PortalResubmitView.as_view(),
        name="api-job-resubmit",
    ),
]
