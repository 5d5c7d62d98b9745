"""Reservation routes of the API (portal endpoints)."""

from django.urls import re_path

from core.api.urls import PORTAL
from reservations.api.views import ReservationDetailView, ReservationListView

urlpatterns = [
    re_path(PORTAL + r"reservations/?$", ReservationListView.as_view(), name="api-reservations"),
    re_path(
        PORTAL + r"reservations/(?P<reservation_id>[^/]+)/?$",
        ReservationDetailView.as_view(),
        name="api-reservation-detail",
    ),
]
