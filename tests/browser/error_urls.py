"""The portal's URL conf plus three views that fail on purpose, so that the browser tests can
visit the 400, 403 and 500 pages (the 404 page needs nothing)."""

from django.core.exceptions import PermissionDenied, SuspiciousOperation
from django.urls import path

from portal import urls as portal_urls


def _bad_request(request):
    raise SuspiciousOperation("a test of the 400 page")


def _denied(request):
    raise PermissionDenied("You may not see this (a test of the 403 page).")


def _fails(request):
    raise RuntimeError("a test of the 500 page")


urlpatterns = [
    path("test-errors/400/", _bad_request),
    path("test-errors/403/", _denied),
    path("test-errors/500/", _fails),
    *portal_urls.urlpatterns,
]

handler400 = portal_urls.handler400
handler403 = portal_urls.handler403
handler404 = portal_urls.handler404
handler500 = portal_urls.handler500
