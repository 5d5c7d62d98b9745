"""A queued job's estimated start, what-if advice and the accuracy of past estimates.

The pure simulation lives in ``jobs.scheduler.estimate``; this module feeds it a snapshot read
like a tick's (without accruing usage: nothing is written but the estimate) and keeps the
result in ``StartEstimate``. Estimates are made on demand (the job page, the explain endpoint)
and reused for ``PORTAL_ESTIMATE_TTL_S``, so a page polled every few seconds costs one
simulation a minute. The first estimate of a job is kept as made: once the job has started,
``started_at - first_start`` is that estimate's error, and ``estimate_accuracy`` summarises those
errors (median and 90th percentile of the absolute error) over the latest started jobs.
"""

from __future__ import annotations

import statistics
from datetime import datetime

from django.conf import settings
from django.utils import timezone

from core.timefmt import utc_z
from jobs.models import Job, StartEstimate
from jobs.scheduler.estimate import advise, estimate
from jobs.scheduler_bridge.snapshot import build_snapshot
from jobs.states import JobStatus

# Past estimates looked at for the accuracy figures (the latest started jobs).
ACCURACY_SAMPLE = 1000


def start_estimate_refresh(*, job: Job, now: datetime | None = None) -> StartEstimate | None:
    """Simulate now and store the estimate (the first one is kept); None unless QUEUED."""
    if job.status != JobStatus.QUEUED:
        return None
    now = now or timezone.now()
    snapshot, _ = build_snapshot(now)
    job_id = str(job.uuid)
    found = estimate(snapshot, job_id)
    advice = advise(snapshot, job_id, baseline=found)
    latest = {
        "made_at": now,
        "start": found.start,
        "note": (found.reason or "")[:300],
        "advice": [
            {"kind": a.kind, "change": a.change, "start": utc_z(a.start), "value": a.value}
            for a in advice
        ],
    }
    row, _ = StartEstimate.objects.update_or_create(
        job=job,
        defaults=latest,
        create_defaults={**latest, "first_made_at": now, "first_start": found.start},
    )
    return row


def start_estimate_current(*, job: Job, now: datetime | None = None) -> StartEstimate | None:
    """The stored estimate when fresh enough, else a new one; None unless QUEUED."""
    if job.status != JobStatus.QUEUED:
        return None
    now = now or timezone.now()
    row = StartEstimate.objects.filter(job=job).first()
    if row is not None and (now - row.made_at).total_seconds() < settings.PORTAL_ESTIMATE_TTL_S:
        return row
    return start_estimate_refresh(job=job, now=now)


def estimate_accuracy() -> dict | None:
    """Median and 90th percentile of |actual start - first estimate| over started jobs."""
    pairs = (
        StartEstimate.objects.filter(job__started_at__isnull=False, first_start__isnull=False)
        .order_by("-first_made_at")
        .values_list("job__started_at", "first_start")[:ACCURACY_SAMPLE]
    )
    errors = sorted(  # (both are set: filtered above)
        abs((started - said).total_seconds()) for started, said in pairs if started and said
    )
    if not errors:
        return None
    return {
        "jobs": len(errors),
        "median_error_s": round(statistics.median(errors)),
        "p90_error_s": round(_percentile(errors, 0.9)),
    }


def _percentile(ordered: list[float], q: float) -> float:
    """Nearest-rank percentile of an ascending list (the value at or below which q lie)."""
    rank = max(1, -(-len(ordered) * q // 1))  # ceil(n * q)
    return ordered[int(rank) - 1]


def start_estimate_json(*, job: Job, full: bool, now: datetime | None = None) -> dict | None:
    """The ``start_estimate`` key of the portal's explain endpoint (None unless QUEUED).

    Advice (changes to the request) only for viewers who see the job in full.
    """
    row = start_estimate_current(job=job, now=now)
    if row is None:
        return None
    return {
        "estimated_start": utc_z(row.start) if row.start else None,
        "made_at": utc_z(row.made_at),
        "note": row.note or None,
        "advice": list(row.advice) if full else [],
        "accuracy": estimate_accuracy(),
    }
