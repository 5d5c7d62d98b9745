"""Report routes of the API (portal endpoints)."""

from django.urls import re_path

from core.api.urls import PORTAL
from reports.api.views import ReportSizesView, ReportUsageView

urlpatterns = [
    re_path(PORTAL + r"reports/usage/?$", ReportUsageView.as_view(), name="api-reports-usage"),
    re_path(PORTAL + r"reports/sizes/?$", ReportSizesView.as_view(), name="api-reports-sizes"),
]
