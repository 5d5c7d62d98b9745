"""Time rules: notBefore/notAfter for queued jobs, minDuration/maxDuration for running ones;
and when the next cycle could decide differently with nothing else changing (``next_wakeup``).

Decisions change on their own only at known moments: a queued job's notBefore (it may start)
or notAfter (it fails), a reservation's start (its halts begin, others are kept off) or end (its
resources open up), a running job's maxDuration deadline (it is cancelled) and, while some
queued job waits for room, a running job's minDuration end (it becomes haltable) and the end
of ``fairness_halt_min_queued_s``, and an interactive job's deadline to start behind the jobs
halted for it. ``next_wakeup`` is the earliest of those strictly after ``now``; the bridge
keeps one timer for it, so time-driven events need not wait for the periodic tick. One pass
over the snapshot, no sorting.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime, timedelta

from .model import Cancel, QueuedJob, RunningJob, Snapshot, format_utc

_UNITS = (("week", 7 * 86400), ("day", 86400), ("hour", 3600), ("minute", 60), ("second", 1))


def format_duration(seconds: float) -> str:
    """``7200`` -> ``"2 hours"``, ``5400`` -> ``"1 hour 30 minutes"``, ``0`` -> ``"0 seconds"``."""
    rest = max(0, int(seconds))
    parts = []
    for unit, size in _UNITS:
        count, rest = divmod(rest, size)
        if count:
            parts.append(f"{count} {unit}{'' if count == 1 else 's'}")
    return " ".join(parts) if parts else "0 seconds"


def format_clock(moment: datetime, now: datetime) -> str:
    """A short UTC time for explanations: ``14:00 UTC`` today, ``2026-12-01 14:00 UTC`` else."""
    moment = moment.astimezone(UTC)
    if moment.date() == now.astimezone(UTC).date():
        return moment.strftime("%H:%M UTC")
    return moment.strftime("%Y-%m-%d %H:%M UTC")


def current_run_s(job: RunningJob, now: datetime) -> float:
    """Seconds this run of the job has lasted (what minDuration is measured against)."""
    return (now - job.started_at).total_seconds()


def total_run_s(job: RunningJob, now: datetime) -> float:
    """Run time summed over restarts (what maxDuration is measured against)."""
    return job.run_seconds_before + current_run_s(job, now)


def past_min_duration(job: RunningJob, now: datetime) -> bool:
    """The scheduler may halt a job only once this is true."""
    return current_run_s(job, now) >= job.min_duration_s


def min_end(job: RunningJob) -> datetime:
    """When the job becomes haltable."""
    return job.started_at + timedelta(seconds=job.min_duration_s)


def max_end(job: RunningJob) -> datetime:
    """When maxDuration cancels the job at the latest."""
    return job.started_at + timedelta(seconds=max(0, job.max_duration_s - job.run_seconds_before))


def max_duration_cancel(job: RunningJob, now: datetime) -> Cancel | None:
    """Cancel a running job whose run time reached its maxDuration (halting jobs are left be)."""
    if job.halting or total_run_s(job, now) < job.max_duration_s:
        return None
    return Cancel(job.id, f"maxDuration of {format_duration(job.max_duration_s)} reached")


def not_after_reason(job: QueuedJob, now: datetime) -> str | None:
    """Why a queued job fails because its notAfter passed, or None."""
    if job.not_after is not None and now >= job.not_after:
        return f"notAfter {format_utc(job.not_after)} passed while queued"
    return None


def not_before_reason(job: QueuedJob, now: datetime) -> str | None:
    """Why a queued job must keep waiting for its notBefore, or None."""
    if job.not_before is not None and now < job.not_before:
        return f"waiting for notBefore {format_utc(job.not_before)}"
    return None


# --- the next wakeup --------------------------------------------------------------------------


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
    # at the next periodic tick (InteractiveRoom in scheduler/halts.py).
    wait_limit = timedelta(seconds=snapshot.config.interactive_halt_wait_s)
    for job in snapshot.queued:
        if job.interactive and job.halt_wait_since is not None:
            consider(job.halt_wait_since + wait_limit)
    patience = snapshot.config.fairness_halt_min_queued_s
    if waiting and patience > 0:
        delay = timedelta(seconds=patience)
        for job in snapshot.queued:
            consider(job.submitted_at + delay)
    # Hour budgets renew at the month's turn: a job waiting for its budget may start then.
    if waiting:
        for quota in snapshot.quotas:
            consider(quota.renews_at)
    return best
