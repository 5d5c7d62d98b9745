"""System actions on jobs, without permission checks: what the scheduler bridge, the runtime
and the user actions (jobs/user_actions/, once they checked who may) call to cancel or halt a
job. Status changes go through ``job_transition``; background work is fired on commit."""

from datetime import datetime

from django.db import transaction
from django.utils import timezone

from core.errors import Conflict
from core.tasks import fire
from core.timefmt import utc_z
from jobs import task_names
from jobs.models import Job
from jobs.signals import job_halt_requested
from jobs.states import HOLDS_RESOURCES, PENDING, JobStatus
from jobs.transitions import job_transition
from jobs.wakeups import tick_request

STOP_TASK = task_names.JOB_STOP
HALT_TASK = task_names.JOB_HALT


def job_cancel_by_system(*, job: Job, reason: str, now: datetime | None = None) -> Job:
    """Cancel without a permission check (scheduler: maxDuration; admins' actions)."""
    if job.status in PENDING:
        if job_transition(
            job=job, to=JobStatus.CANCELLED, message=reason, fields={"end_reason": reason}, now=now
        ):
            tick_request()
        return job
    if job.status in HOLDS_RESOURCES and job.status != JobStatus.CANCELLING:
        with transaction.atomic():
            if job_transition(
                job=job,
                to=JobStatus.CANCELLING,
                message=reason,
                fields={"end_reason": reason},
                now=now,
            ):
                fire(STOP_TASK, job.pk)
        return job
    if job.status == JobStatus.CANCELLING:
        return job
    raise Conflict(f"a job in state {job.status} cannot be cancelled")


def job_halt_by_system(*, job: Job, halt_info: dict, now: datetime | None = None) -> Job:
    """RUNNING -> MUSTHALT and fire the halt procedure (SIGUSR1, wait for exit 123).

    ``job_halt_requested`` is sent in the same transaction: a task of a gang halts its whole
    gang (gangs/), every task MUSTHALT before the first halt procedure runs."""
    now = now or timezone.now()
    if job.status != JobStatus.RUNNING:
        raise Conflict(f"only a RUNNING job can be halted; this one is {job.status}")
    info = {
        "reason": "Unknown",
        "time": utc_z(now),
        "startedJobUuids": [],
        "haltedJobUuids": [str(job.uuid)],
        "slaveName": job.slave.name if job.slave is not None else None,
        "slaveInstance": job.slave.instance_id if job.slave is not None else None,
        "startedJobScores": [],
        "haltedJobScores": [],
        **halt_info,
    }
    with transaction.atomic():
        if job_transition(
            job=job,
            to=JobStatus.MUSTHALT,
            message=f"halt requested: {info['reason']}",
            fields={"halt_events": [*job.halt_events, info]},
            now=now,
        ):
            fire(HALT_TASK, job.pk)
            job_halt_requested.send(sender=Job, job=job, halt_info=info, now=now)
    return job
