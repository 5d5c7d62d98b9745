from django.apps import AppConfig


class JobsConfig(AppConfig):
    name = "jobs"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Here, not at the top: ready() is Django's place for imports that need loaded models.
        from django_q.signals import post_spawn

        # Imported here, not at the top: they import models, which Django loads after the app
        # configs (AppConfig.ready is the documented place for signal wiring).
        from core.signals import capacity_changed
        from jobs.runtime.recovery import recovery_request
        from jobs.scheduler_bridge.ticks import tick_on_capacity_change

        # A starting q cluster recovers what a killed one left half done (jobs/runtime/recovery.py).
        post_spawn.connect(recovery_request, dispatch_uid="gpuportal-recovery")
        # A slave or reservation changed (clusters, reservations): the scheduler looks again.
        capacity_changed.connect(tick_on_capacity_change, dispatch_uid="gpuportal-capacity-tick")
