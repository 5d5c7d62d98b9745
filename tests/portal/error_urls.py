"""The portal's URLs plus views that fail, for tests/portal/test_production.py."""

from django.core.exceptions import PermissionDenied
from django.urls import path

from portal.urls import (  # noqa: F401  (Django looks the handlers up on the root URLconf)
    handler400,
    handler403,
    handler404,
    handler500,
    urlpatterns,
)


def boom(request):
    raise RuntimeError("boom: something broke")


def forbidden(request):
    raise PermissionDenied("members of project vision only")


urlpatterns = [
    path("api/test/boom", boom),
    path("test/boom", boom),
    path("api/test/forbidden", forbidden),
    path("test/forbidden", forbidden),
    *urlpatterns,
]
