"""The periodic django-q2 schedules: safety nets behind the event-driven work."""

from django.conf import settings

from jobs import task_names

PERIODIC = {
    # name: (task path, minutes)
    "scheduler tick (safety net)": (task_names.SCHEDULER_TICK, None),
    # Reconcile probes every slave first (online state, engine info), then repairs drift.
    "reconcile slaves": (task_names.RECONCILE, 1),
}


def schedules_ensure() -> None:
    from django_q.models import Schedule

    for name, (func, minutes) in PERIODIC.items():
        if minutes is None:
            defaults = {
                "func": func,
                "schedule_type": Schedule.MINUTES,
                "minutes": max(1, settings.PORTAL_TICK_INTERVAL_S // 60),
            }
        else:
            defaults = {"func": func, "schedule_type": Schedule.MINUTES, "minutes": minutes}
        Schedule.objects.update_or_create(name=name, defaults={**defaults, "repeats": -1})
