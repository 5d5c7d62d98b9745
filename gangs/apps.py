from django.apps import AppConfig


class GangsConfig(AppConfig):
    """Multi-task OpenPAI jobs (gangs), OpenPAI configs and OpenPAI's routes, one floor above
    jobs (docs/openpai.md)."""

    name = "gangs"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Imported here: the hooks use models, which exist only once apps are ready.
        from gangs.hooks import gangs_connect

        gangs_connect()
