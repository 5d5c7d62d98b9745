from django.apps import AppConfig
from django.core import checks


class JobsConfig(AppConfig):
    name = "jobs"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django_q.signals import post_spawn

        from jobs.recovery import recovery_request

        # A starting q cluster recovers what a killed one left half done (jobs/recovery.py).
        post_spawn.connect(recovery_request, dispatch_uid="gpuportal-recovery")
        checks.register(check_scorer_weights)


def check_scorer_weights(app_configs=None, **kwargs):
    """A mistyped PORTAL_SCHEDULER_SCORER_WEIGHTS fails `manage.py check`, not the first tick."""
    from jobs.scheduling.snapshot import scorer_weights

    try:
        scorer_weights()
    except (ValueError, AttributeError, TypeError) as error:
        return [checks.Error(f"PORTAL_SCHEDULER_SCORER_WEIGHTS: {error}", id="jobs.E001")]
    return []
