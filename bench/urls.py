"""The portal's URLs and, first, bench/api.py's floor (a bare token-authenticated insert)."""

from django.urls import path

from bench.floor import BenchFloorView
from portal.urls import handler400, handler403, handler404, handler500
from portal.urls import urlpatterns as portal_urlpatterns

__all__ = ["handler400", "handler403", "handler404", "handler500", "urlpatterns"]

urlpatterns = [path("api/portal/bench/floor", BenchFloorView.as_view()), *portal_urlpatterns]
