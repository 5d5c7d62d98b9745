from django.conf import settings
from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    # REST API: GPULab v4.0 endpoints, portal endpoints, OpenAPI schema and docs.
    path("api/", include("portal.api_urls")),
    # Tapis v3 Jobs-shaped API and resubmit (docs/tapis.md).
    path("api/", include("tapis.api.urls")),
    # Login certificates for gpulab-cli (download, revoke).
    path("certificates/", include("portal.cert_urls")),
    # Tapis apps: list, editor, submit form.
    path("apps/", include("tapis.urls")),
    # Browser pages.
    path("", include("portal.web_urls")),
]

# JSON under /api/, styled pages elsewhere; never a debug page (DEBUG is off by default).
handler400 = "portal.error_pages.bad_request"
handler403 = "portal.error_pages.permission_denied"
handler404 = "portal.error_pages.page_not_found"
handler500 = "portal.error_pages.server_error"

if settings.PORTAL_BENCH_FLOOR:
    # manage.py bench_api's floor (a bare token-authenticated insert); never on otherwise.
    from portal.api.bench import BenchFloorView

    urlpatterns.insert(0, path("api/portal/bench/floor", BenchFloorView.as_view()))
