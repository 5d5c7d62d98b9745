from django.apps import AppConfig


class NotificationsConfig(AppConfig):
    """E-mails and subscription deliveries of jobs, one floor above jobs (notifications/__init__.py)."""

    name = "notifications"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Here, not at the top: the receivers import models, which Django loads after the app
        # configs (AppConfig.ready is the documented place for signal wiring).
        from jobs.web.page_hooks import job_section_register
        from notifications.receivers import receivers_connect
        from notifications.web import DELIVERIES_SECTION

        receivers_connect()
        # Its card on the job page: subscriptions, the webhook secret, every delivery.
        job_section_register(DELIVERIES_SECTION)
