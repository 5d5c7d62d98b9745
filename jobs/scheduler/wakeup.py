"""When the next cycle could decide differently with nothing else changing: the next wakeup.

Decisions change on their own only at known moments: a queued job's notBefore (it may start)
or notAfter (it fails), a reservation's start (its halts begin, others are kept off) or end (its
resources open up), a running job's maxDuration deadline (it is cancelled) and, while some
queued job waits for room, a running job's minDuration end (it becomes haltable) and the end
of ``fairness_halt_min_queued_s``, and an interactive job's deadline to start behind the jobs
halted for it. ``next_wakeup`` is the earliest of those strictly after
``now``; the bridge keeps one timer for it, so time-driven events need not wait for the
periodic tick. One pass over the snapshot, no sorting.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from .model import Snapshot
from .timing import max_end, min_end


def next_wakeup(
    snapshot: Snapshot,
    *,
    leaving: Iterable[str] = (),
    started: Iterable[str] = (),
    waiting: bool = False,
) -> datetime | None:
    """The earliest moment after ``snapshot.now`` at which a cycle could decide differently.

    ``leaving``: running jobs already halted or cancelled (in this cycle or before); their
    deadlines no longer matter. ``started``: queued jobs started in this cycle; their
    maxDuration deadline is at the earliest ``now + maxDuration`` (the container starts later,
    and the tick then wakes again for the exact moment). ``waiting``: some queued job was left waiting, so the end of a
    running job's minDuration (it becomes haltable) matters too.
    """
    now = snapshot.now
    best: datetime | None = None

    def consider(moment: datetime | None) -> None:
        nonlocal best
        if moment is not None and moment > now and (best is None or moment < best):
            best = moment

    starts = set(started)
    for job in snapshot.queued:
        if job.id in starts:
            consider(now + timedelta(seconds=job.max_duration_s))
            continue
        consider(job.not_before)
        consider(job.not_after)
    for window in snapshot.reservations:
        consider(window.start)
        consider(window.end)
    gone = set(leaving)
    for running in snapshot.running:
        if running.halting or running.id in gone:
            continue
        consider(max_end(running))
        if waiting:
            consider(min_end(running))
    # An interactive job waiting behind jobs halted for it fails at its deadline: on time, not
    # at the next periodic tick (scheduler/interactive.py).
    wait_limit = timedelta(seconds=snapshot.config.interactive_halt_wait_s)
    for job in snapshot.queued:
        if job.interactive and job.halt_wait_since is not None:
            consider(job.halt_wait_since + wait_limit)
    patience = snapshot.config.fairness_halt_min_queued_s
    if waiting and patience > 0:
        delay = timedelta(seconds=patience)
        for job in snapshot.queued:
            consider(job.submitted_at + delay)
    return best
