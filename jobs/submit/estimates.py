"""A queued job's estimated start, its range, what-if advice and the accuracy of past estimates.

The pure simulation lives in ``jobs.scheduler.estimate``; this module feeds it a snapshot read
like a tick's (without accruing usage: nothing is written but the estimate), with the history
of run times (``snapshot.runtime_history``: jobs run as long as their like ran, not to their
maxDuration), and keeps the result in ``StartEstimate``. Estimates are made on demand (the job
page, the explain endpoint) and reused for ``PORTAL_ESTIMATE_TTL_S``, so a page polled every
few seconds costs one simulation a minute. The first estimate of a job is kept as made: once
the job has started, ``started_at - first_start`` is that estimate's error, and
``estimate_accuracy`` summarises those errors (median and 90th percentile of the absolute
error) over the latest ``ACCURACY_SAMPLE`` started jobs that had one.

Advice is offered only when the portal would accept the changed request: the pure side drops
what no registered slave could run; here each change also goes through the submit check
against the registered slaves (``jobs.submit.checks``), as a resubmission would be: which is
why this module lives in submit/, above the bridge whose snapshot it reads.
"""

from __future__ import annotations

import copy
import statistics
from datetime import datetime

from django.conf import settings
from django.utils import timezone

from core.timefmt import utc_z
from jobs.models import Job, StartEstimate
from jobs.scheduler.estimate import Advice, advise, estimate_range
from jobs.scheduler_bridge.snapshot import build_snapshot
from jobs.spec import SpecError, duration_seconds, format_duration
from jobs.states import JobStatus
from jobs.submit.checks import check_request_against_slaves

# Past estimates looked at for the accuracy figures: the latest started jobs.
ACCURACY_SAMPLE = 100


def start_estimate_refresh(*, job: Job, now: datetime | None = None) -> StartEstimate | None:
    """Simulate now and store the estimate (the first one is kept); None unless QUEUED."""
    if job.status != JobStatus.QUEUED:
        return None
    now = now or timezone.now()
    snapshot, _ = build_snapshot(now, history=True)
    job_id = str(job.uuid)
    found = estimate_range(snapshot, job_id)
    advice = [a for a in advise(snapshot, job_id, baseline=found) if advice_accepted(job, a)]
    latest = {
        "made_at": now,
        "start": found.start,
        "earliest": found.earliest,
        "latest": found.latest,
        # A job that a quota holds back: the quota's line, whatever the start (its renewal).
        "note": (found.quota or found.reason or "")[:300],
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


def advised_request(job: Job, advice: Advice) -> dict:
    """The job's request with the advised change made (what the user would submit)."""
    request = copy.deepcopy(job.request)
    resources, scheduling = request["resources"], request["scheduling"]
    if advice.kind == "gpus":
        resources["gpus"] = advice.value
    elif advice.kind == "cluster":
        resources["clusterId"] = advice.value
    elif advice.kind == "gpu_model":
        resources["gpuModel"] = [advice.value]
    elif advice.kind == "max_duration":
        assert isinstance(advice.value, int)
        scheduling["maxDuration"] = format_duration(advice.value)
        if job.min_duration_s > advice.value:  # lowered with it (the change says so)
            scheduling["minDuration"] = format_duration(advice.value)
    return request


def advice_accepted(job: Job, advice: Advice) -> bool:
    """Whether a submission of the changed request passes the submit checks against the
    registered slaves (storage, ports, feasibility) and keeps minDuration <= maxDuration."""
    request = advised_request(job, advice)
    if duration_seconds(request, "minDuration") > duration_seconds(request, "maxDuration"):
        return False  # refused by the spec ("don't set minDuration larger than maxDuration")
    try:
        check_request_against_slaves(project=job.project, request=request, user=job.owner.username)
    except SpecError:
        return False
    return True


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
    """Median and 90th percentile of |actual start - first estimate| over the latest
    ``ACCURACY_SAMPLE`` started jobs that had an estimate."""
    pairs = (
        StartEstimate.objects.filter(job__started_at__isnull=False, first_start__isnull=False)
        .order_by("-job__started_at")
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
        "earliest_start": utc_z(row.earliest) if row.earliest else None,
        "latest_start": utc_z(row.latest) if row.latest else None,
        "made_at": utc_z(row.made_at),
        "note": row.note or None,
        "advice": list(row.advice) if full else [],
        "accuracy": estimate_accuracy(),
    }
