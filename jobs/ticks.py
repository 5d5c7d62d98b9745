"""Asking for a scheduler tick. Every event that can change a decision calls ``tick_request``.

Bursts coalesce twice over: while a tick task waits in the queue (``tick_pending``), further
requests enqueue nothing (the waiting tick starts later and sees their commits); while a tick
runs, the lease makes it run exactly one follow-up (see jobs.scheduling.lease).
"""

from django.conf import settings
from django.db import transaction

from jobs import task_names
from portal.tasks import fire

SCHEDULER_TICK_TASK = task_names.SCHEDULER_TICK


def tick_request() -> None:
    """Ask for a scheduler tick once the current transaction commits."""
    if settings.PORTAL_TASK_MODE != "queue":
        fire(SCHEDULER_TICK_TASK)  # inline and record modes: every request is visible
        return
    transaction.on_commit(_enqueue_unless_pending)


def _enqueue_unless_pending() -> None:
    from django_q.tasks import async_task

    from jobs.models import SchedulerLease

    SchedulerLease.objects.get_or_create(id=1)
    if SchedulerLease.objects.filter(pk=1, tick_pending=False).update(tick_pending=True):
        async_task(SCHEDULER_TICK_TASK, group="scheduler_tick")


def tick_started() -> None:
    """Called by a tick before it reads anything: requests from now on need a new tick."""
    from jobs.models import SchedulerLease

    SchedulerLease.objects.filter(pk=1, tick_pending=True).update(tick_pending=False)
