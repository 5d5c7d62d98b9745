"""Reservation pages."""

from django.urls import include, path

from reservations import views

reservation_patterns = [
    path("", views.reservation_list, name="list"),
    path("new/", views.reservation_create, name="create"),
    path("<uuid:uuid>/", views.reservation_detail, name="detail"),
    path("<uuid:uuid>/edit/", views.reservation_edit, name="edit"),
    path("<uuid:uuid>/delete/", views.reservation_delete, name="delete"),
]

urlpatterns = [
    path("reservations/", include((reservation_patterns, "reservations"))),
]
