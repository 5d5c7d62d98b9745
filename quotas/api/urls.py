"""Quota routes of the API (portal endpoints); the standing is jobs' (jobs/api/urls.py)."""

from django.urls import re_path

from core.api.urls import PORTAL
from quotas.api.views import QuotaDetailView, QuotaListView

urlpatterns = [
    re_path(PORTAL + r"quotas/?$", QuotaListView.as_view(), name="api-quotas"),
    re_path(
        PORTAL + r"quotas/(?P<quota_id>[0-9]{1,12})/?$",
        QuotaDetailView.as_view(),
        name="api-quota-detail",
    ),
]
