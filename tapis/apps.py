from django.apps import AppConfig


class TapisConfig(AppConfig):
    """Tapis-style apps and the Tapis v3 Jobs-shaped API, one floor above jobs and notifications
    (docs/tapis.md)."""

    name = "tapis"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Here, not at the top: tapis.notices imports models, which Django loads after the app
        # configs (AppConfig.ready is the documented place for signal wiring).
        from tapis.notices import tapis_notices_connect

        # Tapis' subscriptions: the shape of their deliveries, the job events that make them.
        tapis_notices_connect()
