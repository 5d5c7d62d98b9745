"""Root URLconf: the admin, each app's API routes under ``api/`` and its pages."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import URLPattern, URLResolver, include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

api_patterns: list[URLPattern | URLResolver] = [
    # GPULab v4.0 endpoints and the portal's own beside them (never inside GPULab's objects).
    path("", include("core.api.urls")),
    path("", include("jobs.api.urls")),
    # OpenPAI: multi-task jobs, the config a job came from (docs/openpai.md).
    path("", include("gangs.api.urls")),
    path("", include("reservations.api.urls")),
    # Quotas an admin sets (docs/quotas.md); the standing is among jobs' routes.
    path("", include("quotas.api.urls")),
    path("", include("accounts.api.urls")),
    # Tapis v3 Jobs-shaped API and resubmit (docs/tapis.md).
    path("", include("tapis.api.urls")),
    # A job's subscriptions, webhook secret and deliveries (notifications/).
    path("", include("notifications.api.urls")),
    # Usage reports per user, project and cluster (docs/reports.md).
    path("", include("reports.api.urls")),
    # Interactive sessions: templates, start, extend, stop (docs/sessions.md).
    path("", include("interactive.api.urls")),
    # OpenAPI schema and Swagger UI (served from drf-spectacular-sidecar, no CDN). No Redoc:
    # drf-spectacular's Redoc page loads Google fonts.
    re_path(r"^schema/?$", SpectacularAPIView.as_view(), name="api-schema"),
    re_path(r"^docs/?$", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
]

urlpatterns = [
    path("admin/", admin.site.urls),
    # REST API: GPULab v4.0 endpoints, portal endpoints, OpenAPI schema and docs (docs/api.md).
    path("api/", include(api_patterns)),
    # Browser pages.
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("", include("jobs.urls")),
    path("", include("gangs.urls")),
    path("", include("reservations.urls")),
    path("", include("accounts.urls")),
    # Tapis apps: list, editor, submit form.
    path("apps/", include("tapis.urls")),
    # Usage reports and their downloads (docs/reports.md).
    path("", include("reports.urls")),
    # Interactive sessions: the list, "New session", the sign-in hand-off to the proxy.
    path("sessions/", include("interactive.urls")),
]

# JSON under /api/, styled pages elsewhere; never a debug page (DEBUG is off by default).
handler400 = "portal.error_pages.bad_request"
handler403 = "portal.error_pages.permission_denied"
handler404 = "portal.error_pages.page_not_found"
handler500 = "portal.error_pages.server_error"
