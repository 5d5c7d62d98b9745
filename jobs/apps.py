from django.apps import AppConfig


class JobsConfig(AppConfig):
    name = "jobs"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Here, not at the top: ready() is Django's place for imports that need loaded models.
        from django_q.signals import post_spawn

        from jobs.runtime.recovery import recovery_request

        # A starting q cluster recovers what a killed one left half done (jobs/runtime/recovery.py).
        post_spawn.connect(recovery_request, dispatch_uid="gpuportal-recovery")
