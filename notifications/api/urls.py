"""Notifications routes of the portal's API (docs/api.md): a job's subscriptions, its webhook
secret and every delivery attempt."""

from django.urls import re_path

from core.api.urls import PORTAL
from notifications.api.views import JobSubscriptionsView

ID = r"(?P<job_id>[^/]+)"

urlpatterns = [
    re_path(
        PORTAL + rf"jobs/{ID}/subscriptions/?$",
        JobSubscriptionsView.as_view(),
        name="api-job-subscriptions",
    ),
]
