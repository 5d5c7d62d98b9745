"""Waking the scheduler: a tick requested on every event that can change a decision
(``tick_request``), and at the next moment a decision changes on its own (the wakeup timer).

Low in jobs' rooms on purpose: submit, user and system actions, the runtime and the apps above
jobs all ask for ticks, while the tick itself (jobs.scheduler_bridge) sits above them; this
module only writes the lease row's flags and fires the task by its name (jobs/task_names.py).

Bursts coalesce twice over: while a tick task waits in the queue (``tick_pending``), further
requests enqueue nothing (the waiting tick starts later and sees their commits); while a tick
runs, the lease makes it run exactly one follow-up (see jobs.scheduler_bridge.tick).

Time-driven ticks (a notBefore passing, a reservation opening, a maxDuration deadline) come from
the wakeup timer at the end of this module.
"""

import logging

from django.conf import settings
from django.db import close_old_connections, connection, transaction
from django.utils import timezone

from core.connections import connections_release
from core.tasks import fire
from jobs import task_names
from jobs.models import SchedulerLease

log = logging.getLogger(__name__)

SCHEDULER_TICK_TASK = task_names.SCHEDULER_TICK


def tick_request() -> None:
    """Ask for a scheduler tick once the current transaction commits."""
    if settings.PORTAL_TASK_MODE != "queue":
        fire(SCHEDULER_TICK_TASK)  # inline and record modes: every request is visible
        return
    transaction.on_commit(_enqueue_unless_pending)


def tick_on_capacity_change(sender, **kwargs) -> None:
    """Receiver of core.signals.capacity_changed (sent by clusters and reservations, which may
    not import jobs): a slave or a reservation changed, so the scheduler looks again."""
    tick_request()


def _enqueue_unless_pending() -> None:
    # Imported when first needed (cost): django_q.tasks loads django-q's models and broker
    # machinery, which processes that never enqueue (inline and record modes) skip; tests
    # replace async_task there.
    from django_q.tasks import async_task

    # The flag is a database row, not a look at the broker's queue: the same on the ORM broker
    # and on Redis, and shared by every web and worker process.
    # A tick already waits (the usual case under a burst of submits): a read, not a write, so
    # each submit does not take the database's write lock a second time (SQLite).
    if _tick_pending():
        return
    SchedulerLease.objects.get_or_create(id=1)
    if SchedulerLease.objects.filter(pk=1, tick_pending=False).update(tick_pending=True):
        try:
            async_task(SCHEDULER_TICK_TASK, group="scheduler_tick")
        except Exception:
            # The broker refused (Redis down): clear the flag so the next request tries again
            # instead of every request until the periodic tick believing one is queued.
            SchedulerLease.objects.filter(pk=1).update(tick_pending=False)
            raise


def _tick_pending() -> bool:
    # Plain SQL: every submit asks this once, and building the ORM query cost more than
    # running it (a quarter of a millisecond of each submit's CPU).
    table = connection.ops.quote_name(SchedulerLease._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT 1 FROM {table} WHERE id = 1 AND tick_pending")
        return cursor.fetchone() is not None


def tick_started() -> None:
    """Called by a tick before it reads anything: requests from now on need a new tick."""

    SchedulerLease.objects.filter(pk=1, tick_pending=True).update(tick_pending=False)


# --- the wakeup timer ------------------------------------------------------------------------
# Every tick stores the next moment a decision can change on its own (the pure cycle's
# ``next_wakeup``) on the lease row. One timer thread in the watcher process (``wakeup_loop``)
# reads it about once a second and asks for a tick when it is due. Stored in the database, it
# survives restarts and is shared by every process; several watchers are fine: clearing the
# moment is a compare-and-swap, so one of them asks.

WAKEUP_POLL_S = 1.0


def wakeup_store(moment) -> None:
    """Remember when the next time-driven tick is due (None: none is)."""

    SchedulerLease.objects.get_or_create(id=1)
    SchedulerLease.objects.filter(pk=1).update(next_wakeup=moment)


def wakeup_fire_if_due(now=None) -> float:
    """Ask for a tick when the stored wakeup is due; returns seconds until it (or the poll)."""

    moment = SchedulerLease.objects.filter(pk=1).values_list("next_wakeup", flat=True).first()
    if moment is None:
        return WAKEUP_POLL_S
    left = (moment - (now or timezone.now())).total_seconds()
    if left > 0:
        return left
    if SchedulerLease.objects.filter(pk=1, next_wakeup=moment).update(next_wakeup=None):
        tick_request()  # the tick stores the next wakeup
    return 0.0


def wakeup_loop(stop) -> None:
    """Run until ``stop`` is set: ask for a tick at every stored wakeup."""
    while not stop.is_set():
        try:
            close_old_connections()
            wait = wakeup_fire_if_due()
        except Exception:  # the database may be briefly unreachable: try again shortly
            log.exception("wakeup timer")
            wait = WAKEUP_POLL_S
        finally:
            connections_release()  # not held while this thread sleeps (a small shared pool)
        # Re-read at least every poll: a tick may have stored an earlier moment meanwhile.
        stop.wait(min(max(wait, 0.0), WAKEUP_POLL_S))
