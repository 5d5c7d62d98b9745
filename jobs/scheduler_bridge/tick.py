"""One tick: snapshot, pure cycle, apply; at most one at a time, and exactly one follow-up for
events during a tick (the lease).

A single ``SchedulerLease`` row is taken with compare-and-swap (works the same on SQLite and
PostgreSQL). A tick that finds the lease taken sets ``rerun_requested`` instead of running; the
holder sees the flag when it would release, and runs once more. The holder renews the lease
every fifth of ``PORTAL_TICK_LEASE_S`` while it ticks (``lease_heartbeat``); a lease not renewed
for ``PORTAL_TICK_LEASE_S`` belongs to a killed worker and may be taken over. The holder's name
starts with its process (``lease_holder``), so a lease whose holder ran on this host and is gone
is taken over at once (``jobs.execution.heartbeat.holder_dead``).
"""

import time
import uuid
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from core.faults import crash_point
from jobs.execution.heartbeat import Heartbeat, holder_dead, holder_name
from jobs.models import SchedulerLease
from jobs.scheduler.core import gc_paused, run_cycle
from jobs.scheduler_bridge.apply import apply
from jobs.scheduler_bridge.bulk_writes import job_state_counts_compact
from jobs.scheduler_bridge.snapshot import build_snapshot, running_rows, scheduler_config
from jobs.scheduler_bridge.usage import usage_accrue
from jobs.wakeups import tick_started, wakeup_store


def tick_once(now: datetime | None = None) -> dict:
    now = now or timezone.now()
    with gc_paused():  # the whole tick: snapshot rows, cycle and apply
        began = time.perf_counter()
        running = running_rows()
        usage = usage_accrue(now=now, running=running, config=scheduler_config())
        snapshot, queued = build_snapshot(now, running=running, usage=usage)
        built = time.perf_counter()
        result = run_cycle(snapshot)
        decided = time.perf_counter()
        summary = apply(result, queued, now)
        summary["next_wakeup"] = result.next_wakeup
        # Freed by reference counting before the collector is back: its first pass would
        # otherwise walk every row and job of the tick once more (0.1 s at 10k jobs).
        del running, usage, snapshot, queued, result
    summary.update(
        snapshot_s=built - began,
        cycle_s=decided - built,
        apply_s=time.perf_counter() - decided,
    )
    return summary


def tick(now: datetime | None = None) -> list[dict] | None:
    """Run a tick unless one is running (then that one runs once more). Returns summaries."""
    holder = lease_holder()  # names this process: a killed one's lease is taken over at once
    tick_started()
    if not lease_acquire_or_request_rerun(holder=holder):
        return None
    crash_point("during_tick")
    summaries = []
    with lease_heartbeat(holder=holder):  # a killed holder is noticed in seconds
        while True:
            began = time.perf_counter()
            try:
                summaries.append(tick_once(now))
                # Only the last tick of a run matters: each one sees the world as it is now.
                wakeup_store(summaries[-1]["next_wakeup"])
            except Exception:
                lease_release_or_continue(holder=holder, seconds=time.perf_counter() - began)
                raise
            if not lease_release_or_continue(holder=holder, seconds=time.perf_counter() - began):
                # A list's total sums these rows: a few per state, however busy the site.
                job_state_counts_compact()
                return summaries
            now = None  # a follow-up tick looks at the world as it is now


# --- the lease --------------------------------------------------------------------------------


def _row() -> None:
    SchedulerLease.objects.get_or_create(id=1)


def lease_holder() -> str:
    """A name for one tick run: this process (``node:pid:start``) and a tail of its own."""
    return f"{holder_name()}:{uuid.uuid4().hex[:12]}"


def _take_from_dead_holder(*, holder: str, now: datetime) -> bool:
    """Take the lease when its holder ran on this host and its process is gone: matched by the
    dead holder's name, so a lease taken since by anyone else is left alone."""
    current = SchedulerLease.objects.filter(pk=1).values_list("holder", flat=True).first()
    if not current or not holder_dead(current):
        return False
    return (
        SchedulerLease.objects.filter(pk=1, holder=current).update(
            holder=holder, acquired_at=now, rerun_requested=False
        )
        == 1
    )


def lease_acquire_or_request_rerun(*, holder: str, now: datetime | None = None) -> bool:
    """True: the caller holds the lease and must tick. False: the holder will tick again."""
    _row()
    while True:
        now = now or timezone.now()
        stale = now - timedelta(seconds=settings.PORTAL_TICK_LEASE_S)
        free_or_stale = Q(holder="") | Q(acquired_at__lt=stale)
        taken = (
            SchedulerLease.objects.filter(free_or_stale, pk=1).update(
                holder=holder, acquired_at=now, rerun_requested=False
            )
            == 1
        )
        if taken or _take_from_dead_holder(holder=holder, now=now):
            return True
        asked = (
            SchedulerLease.objects.filter(pk=1).exclude(holder="").update(rerun_requested=True) == 1
        )
        if asked:
            return False
        now = None  # the lease was released between our two updates: try to take it again


def lease_release_or_continue(*, holder: str, seconds: float | None = None) -> bool:
    """Release the lease; True when a rerun was requested meanwhile (caller ticks again)."""
    now = timezone.now()
    released = SchedulerLease.objects.filter(pk=1, holder=holder, rerun_requested=False).update(
        holder="", acquired_at=None, last_tick_at=now, last_tick_seconds=seconds
    )
    if released == 1:
        return False
    renewed = SchedulerLease.objects.filter(pk=1, holder=holder).update(
        rerun_requested=False, acquired_at=now, last_tick_at=now, last_tick_seconds=seconds
    )
    # renewed == 0: our lease was taken over as stale; the new holder runs, not us.
    return renewed == 1


def lease_renew(*, holder: str) -> bool:
    """The holder's heartbeat: still alive. False when the lease was taken over meanwhile."""
    return (
        SchedulerLease.objects.filter(pk=1, holder=holder).update(acquired_at=timezone.now()) == 1
    )


def lease_heartbeat(*, holder: str):
    """``with lease_heartbeat(holder=...):`` renews the lease in a thread while a tick runs."""
    return Heartbeat(lambda: lease_renew(holder=holder), settings.PORTAL_TICK_LEASE_S / 5)
