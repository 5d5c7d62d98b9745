"""Sessions routes of the portal's API (docs/sessions.md "REST")."""

from django.urls import re_path

from core.api.urls import PORTAL
from interactive.api.views import (
    JobWebPortView,
    SessionExtendView,
    SessionsView,
    SessionTemplatesView,
    SessionView,
)

KEY = r"(?P<session_key>[A-Za-z0-9_-]+)"

urlpatterns = [
    re_path(
        PORTAL + r"session-templates/?$",
        SessionTemplatesView.as_view(),
        name="api-session-templates",
    ),
    re_path(PORTAL + r"sessions/?$", SessionsView.as_view(), name="api-sessions"),
    re_path(PORTAL + rf"sessions/{KEY}/?$", SessionView.as_view(), name="api-session"),
    re_path(
        PORTAL + rf"sessions/{KEY}/extend/?$",
        SessionExtendView.as_view(),
        name="api-session-extend",
    ),
    re_path(
        PORTAL + r"jobs/(?P<job_id>[^/]+)/web-ports/(?P<port>[0-9]{1,5})/?$",
        JobWebPortView.as_view(),
        name="api-job-web-port",
    ),
]
