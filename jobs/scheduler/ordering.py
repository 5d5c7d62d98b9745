"""Queue order: interactive jobs first, then fair share, short jobs and submit time.

Interactive jobs go first: they start at once or fail, so a batch job that would take their room
in the same cycle turns a wait into a failure (the batch job loses one cycle, the interactive one
its only chance). Within each group the lightest user (least decayed usage) goes first so that
people who used the service least lately start first, then shorter maxDuration (easier to fit
around reservations and cheaper to wait for), then the oldest submission. The job id makes the
order total, so the result never depends on the order of the input.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime

from .model import QueuedJob


def queue_key(job: QueuedJob, usage: Mapping[str, float]) -> tuple[bool, float, int, datetime, str]:
    """Sort key of one queued job; smaller starts first."""
    return (
        not job.interactive,
        usage.get(job.user, 0.0),
        job.max_duration_s,
        job.submitted_at,
        job.id,
    )


def order_queue(jobs: Iterable[QueuedJob], usage: Mapping[str, float]) -> list[QueuedJob]:
    """The queued jobs in the order the cycle tries them."""
    return sorted(jobs, key=lambda job: queue_key(job, usage))
