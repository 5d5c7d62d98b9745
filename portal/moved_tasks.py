"""Background tasks that moved to an app above ``jobs`` keep running under their old path.

django-q2 stores a task's dotted path in its queue (the ORM broker's rows, Redis lists) and in
schedules: a task fired by an older release names the module it lived in then. Until issue 25
the notifications app's tasks were ``jobs.tasks.job_notify`` and ``jobs.tasks.job_deliver``.
``jobs`` may not import the apps above it (the import contract), so the old names are made to
resolve here, on the top floor, in the q cluster before it forks its workers (which inherit
them): django-q2's worker looks the path up with ``pydoc.locate``, which finds the function set
on ``jobs.tasks`` by the old name. Stored schedules are rewritten to the new paths at the same
start, so a schedule never depends on the alias. Nothing fires an old path any more (each
app fires its own task_names).
"""

from __future__ import annotations

from importlib import import_module

from django.db import connections
from django_q.models import Schedule

from core.tasks import resolve
from notifications import task_names as notifications_task_names

# old dotted path -> the path the task has now
MOVED_TASKS: dict[str, str] = {
    "jobs.tasks.job_notify": notifications_task_names.JOB_NOTIFY,
    "jobs.tasks.job_deliver": notifications_task_names.JOB_DELIVER,
}


def moved_tasks_alias() -> None:
    """Make every old path resolve to its task in this process (and the workers it forks)."""
    for old, new in MOVED_TASKS.items():
        module_name, _, name = old.rpartition(".")
        module = import_module(module_name)
        if not hasattr(module, name):  # never shadow a task that lives there again
            setattr(module, name, resolve(new))


def moved_schedules_rewrite(*, using: str = "default") -> int:
    """Point stored schedules at the new paths; returns how many were rewritten."""
    if Schedule._meta.db_table not in connections[using].introspection.table_names():
        return 0
    return sum(
        Schedule.objects.using(using).filter(func=old).update(func=new)
        for old, new in MOVED_TASKS.items()
    )
