from django.apps import AppConfig


class ReservationsConfig(AppConfig):
    name = "reservations"
    default_auto_field = "django.db.models.BigAutoField"
