"""Cluster and slave routes of the API (GPULab v4.0)."""

from django.urls import re_path

from clusters.api.views import ClusterListView, SlaveListView
from core.api.urls import GPULAB

urlpatterns = [
    re_path(GPULAB + r"clusters/?$", ClusterListView.as_view(), name="gpulab-clusters"),
    re_path(GPULAB + r"slaves/?$", SlaveListView.as_view(), name="gpulab-slaves"),
]
