"""Live cluster and slave pages."""

from django.urls import include, path

from clusters import views

live_patterns = [
    path("clusters/", views.cluster_list, name="clusters"),
    path("slaves/", views.slave_list, name="slaves"),
]

urlpatterns = [
    path("live/", include((live_patterns, "live"))),
]
