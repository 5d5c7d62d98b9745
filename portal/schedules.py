"""The periodic django-q2 schedules: safety nets behind the event-driven work.

Made (or updated) after every ``migrate`` (portal/apps.py), so a deployment that runs only
``migrate``, ``qcluster`` and ``watch_slaves`` has them too; run_portal makes sure as well.
"""

from django.conf import settings
from django.db import connections

from core.tasks import task_timeout
from jobs import task_names

PERIODIC = {
    # name: (task path, minutes)
    "scheduler tick (safety net)": (task_names.SCHEDULER_TICK, None),
    # Reconcile probes every slave first (online state, engine info), then repairs drift.
    "reconcile slaves": (task_names.RECONCILE, 1),
    # Archived outputs past PORTAL_OUTPUT_RETENTION_DAYS (jobs/runtime/outputs.py).
    "purge old job outputs": (task_names.OUTPUTS_PURGE, 60),
}


def schedules_ensure(*, using: str = "default") -> None:
    from django_q.models import Schedule

    # `migrate` of a single app may run before django-q2's own tables exist.
    if Schedule._meta.db_table not in connections[using].introspection.table_names():
        return
    for name, (func, minutes) in PERIODIC.items():
        if minutes is None:
            defaults = {
                "func": func,
                "schedule_type": Schedule.MINUTES,
                "minutes": max(1, settings.PORTAL_TICK_INTERVAL_S // 60),
            }
        else:
            defaults = {"func": func, "schedule_type": Schedule.MINUTES, "minutes": minutes}
        timeout = task_timeout(func)
        # Above Q_CLUSTER's 60 s: reconcile visits every slave (see core.tasks.task_timeout).
        defaults["kwargs"] = repr({"q_options": {"timeout": timeout}}) if timeout else None
        Schedule.objects.using(using).update_or_create(
            name=name, defaults={**defaults, "repeats": -1}
        )
