"""Time rules: notBefore/notAfter for queued jobs, minDuration/maxDuration for running ones."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from .model import Cancel, QueuedJob, RunningJob, format_utc

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
