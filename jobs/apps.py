from django.apps import AppConfig
from django.core import checks


class JobsConfig(AppConfig):
    name = "jobs"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Here, not at the top: ready() is Django's place for imports that need loaded models.
        from django_q.signals import post_spawn

        # Imported here, not at the top: they import models, which Django loads after the app
        # configs (AppConfig.ready is the documented place for signal wiring).
        from core.signals import capacity_changed
        from jobs.execution.reconcile import recovery_request
        from jobs.wakeups import tick_on_capacity_change

        # A starting q cluster recovers what a killed one left half done (jobs/execution/reconcile.py).
        post_spawn.connect(recovery_request, dispatch_uid="gpuportal-recovery")
        # A slave or reservation changed (clusters, reservations): the scheduler looks again.
        capacity_changed.connect(tick_on_capacity_change, dispatch_uid="gpuportal-capacity-tick")
        checks.register(check_scorer_weights)
        checks.register(check_storage_aliases)


def check_scorer_weights(app_configs=None, **kwargs):
    """A mistyped PORTAL_SCHEDULER_SCORER_WEIGHTS fails `manage.py check`, not the first tick."""
    from jobs.scheduler_bridge.snapshot import scorer_weights

    try:
        scorer_weights()
    except (ValueError, AttributeError, TypeError) as error:
        return [checks.Error(f"PORTAL_SCHEDULER_SCORER_WEIGHTS: {error}", id="jobs.E001")]
    return []


def check_storage_aliases(app_configs=None, **kwargs):
    """A mistyped PORTAL_STORAGE_ALIASES fails `manage.py check`, not the first submission."""
    from django.conf import settings

    from jobs.execution.storage import storage_aliases

    try:
        storage_aliases(settings.PORTAL_STORAGE_ALIASES)
    except ValueError as error:
        return [checks.Error(f"PORTAL_STORAGE_ALIASES: {error}", id="jobs.E002")]
    return []
