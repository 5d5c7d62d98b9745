"""The gang of a multi-task OpenPAI job, written beside its tasks at submit."""

from __future__ import annotations

from datetime import datetime

from gangs.models import JobGang
from jobs.models import Job
from jobs.states import JobStatus


def gang_create(
    *, user, project, config: dict, tasks: list[dict], jobs: list[Job], now: datetime
) -> JobGang:
    """Store the gang (``config`` with image credentials masked) and link its tasks: ``jobs``
    are the tasks just submitted, in the order of ``tasks`` (expand_tasks'). Runs inside the
    submit's transaction: the gang and its tasks, or nothing."""
    gang = JobGang.objects.create(
        name=config["jobName"],
        owner=user,
        project=project,
        config=config,
        task_requests=[
            {
                "role": task["role"],
                "index": task["index"],
                "name": job.name,
                "description": job.description,
                "request": job.request,
            }
            for task, job in zip(tasks, jobs, strict=True)
        ],
        retry_count=config["retryCount"],
        status=JobStatus.QUEUED,
        created=now,
        status_updated=now,
    )
    for task, job in zip(tasks, jobs, strict=True):
        job.gang, job.task_role, job.task_index, job.gang_attempt = (
            gang, task["role"], task["index"], 1
        )  # fmt: skip
        job.openpai_config = config
    Job.objects.bulk_update(
        jobs, ["gang", "task_role", "task_index", "gang_attempt", "openpai_config"]
    )
    return gang
