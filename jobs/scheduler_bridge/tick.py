"""One tick: snapshot, pure cycle, apply; at most one at a time (the lease)."""

import time
from datetime import datetime

from django.utils import timezone

from core.faults import crash_point
from jobs.scheduler.core import gc_paused, run_cycle
from jobs.scheduler_bridge.apply import apply
from jobs.scheduler_bridge.bulk_writes import job_state_counts_compact
from jobs.scheduler_bridge.lease import (
    lease_acquire_or_request_rerun,
    lease_heartbeat,
    lease_holder,
    lease_release_or_continue,
)
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
