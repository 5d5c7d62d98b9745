"""A user's cancel, halt, hold, release or delete of one task acts on the whole gang.

jobs' action registry (jobs/user_actions/registry.py) hands the user actions on a task of a gang to
the ``*_by_user`` services here (registered by gangs/hooks.py), after its permission check; a
halt of one task (a user's or the scheduler's) halts the rest of the gang through
``jobs.signals.job_halt_requested`` (``gang_halt``). Every status change goes through
``job_transition``.
"""

from __future__ import annotations

from datetime import datetime

from django.db import transaction
from django.utils import timezone

from accounts.permissions import may_delete_all_jobs
from core.errors import Conflict, NotAllowed
from core.tasks import fire
from core.timefmt import utc_z
from gangs.completion import gang_task_stop
from gangs.models import JobGang
from jobs import task_names
from jobs.models import Job
from jobs.states import FINISHED, HOLDS_RESOURCES, PENDING, TERMINAL, JobStatus
from jobs.transitions import job_transition
from jobs.user_actions.services import cancelled_by, job_delete
from jobs.wakeups import tick_request

HALT_TASK = task_names.JOB_HALT
# --- user actions on the whole gang --------------------------------------------------------


def gang_tasks(job: Job) -> list[Job]:
    """Every task of the gang's current attempt (for actions) with their slave."""
    assert job.gang is not None  # a gang task
    return list(
        Job.objects.filter(gang_id=job.gang_id, gang_attempt=job.gang.attempt)
        .select_related("slave", "owner", "project", "gang")
        .order_by("task_role", "task_index")
    )


def gang_info(job: Job, verb: str) -> str:
    """What the API (header X-Portal-Info) and the pages say after an action on one task."""
    assert job.gang_id is not None  # a gang task
    gang = JobGang.objects.get(pk=job.gang_id)
    count = Job.objects.filter(gang=gang, gang_attempt=gang.attempt).count()
    return (
        f"{verb} the whole job {gang.name}: {count} task(s) of attempt {gang.attempt} "
        "(a task of a multi-task OpenPAI job is never acted on alone)"
    )


def gang_cancel(*, job: Job, reason: str, now: datetime | None = None) -> int:
    assert job.gang is not None and job.gang_id is not None  # a gang task
    now = now or timezone.now()
    with transaction.atomic():
        JobGang.objects.filter(pk=job.gang_id).update(
            cancelled_by_user=True, end_reason=reason[:1000]
        )
    tasks = gang_tasks(job)
    acted = 0
    for task in tasks:
        if task.status not in TERMINAL:
            gang_task_stop(task, reason, now)
            acted += 1
    if not acted:
        raise Conflict(f"the job {job.gang.name} has already ended and cannot be cancelled")
    tick_request()
    return acted


def gang_halt(*, job: Job, halt_info: dict, now: datetime | None = None) -> int:
    """Halt every running task of the gang (a user's or the scheduler's halt of one of them:
    that one is MUSTHALT already, in the same transaction)."""
    now = now or timezone.now()
    acted = 0
    # One transaction: every task is MUSTHALT before the first halt procedure runs.
    with transaction.atomic():
        for task in gang_tasks(job):
            if task.status != JobStatus.RUNNING:
                continue
            info = {**halt_info, "haltedJobUuids": [str(task.uuid)], "time": utc_z(now)}
            if job_transition(
                job=task,
                to=JobStatus.MUSTHALT,
                message=f"halt requested: {info.get('reason', 'Unknown')} (whole gang)",
                fields={"halt_events": [*task.halt_events, info]},
                now=now,
            ):
                fire(HALT_TASK, task.pk)
                acted += 1
    return acted


def gang_hold(*, job: Job, who: str, now: datetime | None = None) -> int:
    tasks = gang_tasks(job)
    if any(t.status not in PENDING for t in tasks):
        raise Conflict("only a job whose tasks all wait can be put on hold")
    acted = 0
    with transaction.atomic():
        for task in tasks:
            if task.status == JobStatus.QUEUED and job_transition(
                job=task, to=JobStatus.ONHOLD, message=f"put on hold by {who} (whole gang)", now=now
            ):
                acted += 1
    return acted


def gang_release(*, job: Job, who: str, now: datetime | None = None) -> int:
    acted = 0
    with transaction.atomic():
        for task in gang_tasks(job):
            if task.status == JobStatus.ONHOLD and job_transition(
                job=task, to=JobStatus.QUEUED, message=f"released by {who} (whole gang)", now=now
            ):
                acted += 1
        if acted:
            tick_request()
    return acted


def gang_delete(*, job: Job, who: str, now: datetime | None = None) -> int:
    """Hide every task of every attempt. A gang still waiting is revoked first (cancelled, as
    ``gpulab-cli rm`` revokes a job that has not run); one with a task on a slave is refused."""
    assert job.gang_id is not None  # a gang task
    now = now or timezone.now()
    tasks = list(Job.objects.filter(gang_id=job.gang_id).exclude(status=JobStatus.DELETED))
    if any(t.status in HOLDS_RESOURCES for t in tasks):
        raise Conflict("the job's tasks are on a slave: cancel it first (gpulab-cli cancel)")
    with transaction.atomic():
        if any(t.status in PENDING for t in tasks):
            JobGang.objects.filter(pk=job.gang_id).update(
                cancelled_by_user=True, end_reason=f"revoked by {who}"
            )
            for task in tasks:
                if task.status in PENDING:
                    gang_task_stop(task, f"revoked by {who}", now)
        for task in tasks:
            task.refresh_from_db()
            if task.status in FINISHED:
                job_transition(
                    job=task,
                    to=JobStatus.DELETED,
                    message=f"deleted by {who} (whole gang)",
                    now=now,
                )
    return len(tasks)


# --- the registry's user actions on a task of a gang (permission checked by the registry) ----


def gang_cancel_by_user(*, job: Job, user, reason: str = "", now: datetime | None = None) -> Job:
    gang_cancel(job=job, reason=cancelled_by(user, reason), now=now)
    return job


def gang_hold_by_user(*, job: Job, user, now: datetime | None = None) -> Job:
    gang_hold(job=job, who=user.username, now=now)
    return job


def gang_release_by_user(*, job: Job, user, now: datetime | None = None) -> Job:
    gang_release(job=job, who=user.username, now=now)
    return job


def gang_delete_by_user(
    *,
    job: Job,
    user,
    finished: bool = True,
    real: bool = False,
    force: bool = False,
    now: datetime | None = None,
) -> Job | None:
    """Hide the whole gang (``gang_delete``); ``real`` (admins) removes this task's row alone,
    as for any job (``job_delete``, which checks the admin powers)."""
    if real:
        return job_delete(job=job, user=user, finished=finished, real=real, force=force, now=now)
    if force and not may_delete_all_jobs(user):
        raise NotAllowed("'real' and 'force' deletion are for admins only")
    gang_delete(job=job, who=user.username, now=now)
    job.refresh_from_db()
    return job
