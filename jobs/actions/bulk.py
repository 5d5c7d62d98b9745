"""The jobs table for sweeps: queue positions, and bulk actions that run the per-job services.

Bulk actions never bypass a rule: each selected job goes through the same service as its own
button (``jobs.actions.registry``: cancel, hold, release, delete), so permission and state checks hold,
and every refusal is reported per job instead of failing the whole batch.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import F, Window
from django.db.models.functions import RowNumber

from core.errors import ServiceError
from jobs.actions.registry import ACTIONS
from jobs.models import Job
from jobs.selectors import annotate_queue_key, job_can_act
from jobs.states import JobStatus

PAGE_SIZES = (25, 50, 100, 200)
DEFAULT_PAGE_SIZE = 25
BULK_ACTIONS = ("cancel", "hold", "release", "delete")
# At most this many jobs in one bulk request (a page of the largest size).
BULK_LIMIT = max(PAGE_SIZES)

# name -> (label, what it does to a job: shown on the confirmation)
BULK_LABELS = {
    "cancel": ("Cancel", "cancelled (a job on a slave is stopped)"),
    "hold": ("Hold", "put on hold"),
    "release": ("Release", "released to the queue"),
    "delete": ("Delete", "deleted from the list (their history is kept)"),
}


def job_act(*, job: Job, user, action: str) -> Job | None:
    """Run one action on one job through its service (ServiceError when refused)."""
    if action not in ACTIONS:
        raise ServiceError(f"action: unknown action {action!r}")
    return ACTIONS[action].run(job=job, user=user)


@dataclass
class BulkOutcome:
    job: Job
    done: bool
    message: str


def job_bulk_preview(*, jobs: list[Job], user, action: str) -> list[BulkOutcome]:
    """What ``job_bulk_act`` would do, for the confirmation: the refusals known beforehand."""
    outcomes = []
    for job in jobs:
        if not job_can_act(user, job):
            outcomes.append(BulkOutcome(job, False, "only members of the job's project may act"))
        elif action not in allowed_for(job):
            outcomes.append(BulkOutcome(job, False, f"not possible while {job.status}"))
        else:
            outcomes.append(BulkOutcome(job, True, BULK_LABELS[action][1]))
    return outcomes


def allowed_for(job: Job) -> set[str]:
    """The actions the job's state allows (the same rule as the job page's buttons)."""
    return {name for name, action in ACTIONS.items() if action.state_allows(job)}


def job_bulk_act(*, jobs: list[Job], user, action: str) -> list[BulkOutcome]:
    """Run ``action`` on each job through its service; one outcome per job, refusals included
    (the service's own message: state, permission)."""
    if action not in BULK_ACTIONS:
        raise ServiceError(f"action: must be one of {', '.join(BULK_ACTIONS)}")
    outcomes = []
    for job in jobs:
        try:
            job_act(job=job, user=user, action=action)
        except ServiceError as error:
            outcomes.append(BulkOutcome(job, False, str(error)))
        else:
            outcomes.append(BulkOutcome(job, True, BULK_LABELS[action][1]))
    return outcomes


def queue_positions(jobs: list[Job]) -> dict[int, int]:
    """Each QUEUED job's place in the scheduler's queue order (1 starts first), for the jobs
    shown. The order is ``jobs.scheduler.ordering.queue_key`` with the owners' fair-share usage
    as of the last tick (jobs.selectors.SORTS["queue"] sorts by the same key). The
    database numbers the whole queue (a window function) and answers only the shown jobs."""
    wanted = [job.pk for job in jobs if job.status == JobStatus.QUEUED]
    if not wanted:
        return {}
    ranked = annotate_queue_key(Job.objects.filter(status=JobStatus.QUEUED)).annotate(
        _place=Window(
            RowNumber(),
            order_by=[
                F("interactive").desc(),
                F("_queue_usage").asc(),
                F("max_duration_s").asc(),
                F("created").asc(),
                F("id").asc(),
            ],
        )
    )
    return dict(ranked.filter(pk__in=wanted).values_list("pk", "_place"))
