"""Account routes of the API (portal endpoints): projects, me, API token."""

from django.urls import re_path

from accounts.api.views import MeView, ProjectListView, TokenView
from core.api.urls import PORTAL

urlpatterns = [
    re_path(PORTAL + r"projects/?$", ProjectListView.as_view(), name="api-projects"),
    re_path(PORTAL + r"me/?$", MeView.as_view(), name="api-me"),
    re_path(PORTAL + r"token/?$", TokenView.as_view(), name="api-token"),
]
