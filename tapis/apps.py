from django.apps import AppConfig


class TapisConfig(AppConfig):
    """Tapis-style apps and the Tapis v3 Jobs-shaped API, one floor above jobs (docs/tapis.md)."""

    name = "tapis"
    default_auto_field = "django.db.models.BigAutoField"
