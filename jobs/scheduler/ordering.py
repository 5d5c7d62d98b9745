"""Queue order: fair share first, then interactive, short jobs and submit time.

The lightest user (least decayed usage) goes first so that people who used the service least
lately start first; within the same usage, interactive jobs (which fail when they cannot start at
once) come before batch jobs, then shorter maxDuration (easier to fit around reservations and
cheaper to wait for), then the oldest submission. The job id makes the order total, so the result
never depends on the order of the input.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from .model import QueuedJob


def queue_key(job: QueuedJob, usage: Mapping[str, float]) -> tuple:
    """Sort key of one queued job; smaller starts first."""
    return (
        usage.get(job.user, 0.0),
        not job.interactive,
        job.max_duration_s,
        job.submitted_at,
        job.id,
    )


def order_queue(jobs: Iterable[QueuedJob], usage: Mapping[str, float]) -> list[QueuedJob]:
    """The queued jobs in the order the cycle tries them."""
    return sorted(jobs, key=lambda job: queue_key(job, usage))
