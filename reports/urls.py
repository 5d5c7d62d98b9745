"""Report pages and their downloads."""

from django.urls import include, path, re_path

from reports import views

report_patterns = [
    path("", views.reports_usage, name="usage"),
    re_path(
        r"^(?P<kind>usage|sizes)\.(?P<extension>csv|json)$",
        views.reports_download,
        name="download",
    ),
]

urlpatterns = [
    path("reports/", include((report_patterns, "reports"))),
]
