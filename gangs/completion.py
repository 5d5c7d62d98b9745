"""A gang's tasks ended: completion policy, stopping the rest, attempts and retry."""

from __future__ import annotations

from datetime import datetime

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from core.tasks import fire
from core.timefmt import utc_z
from gangs.models import JobGang
from gangs.policy import GANG_ACTIVE, GANG_FINAL, Outcome, gang_outcome
from gangs.ports import port_requeues, requeue_for_port_clash
from jobs import task_names
from jobs.models import Job, JobEvent, JobPullSecret
from jobs.spec.v2 import columns_from_request
from jobs.states import FINISHED, HOLDS_RESOURCES, PENDING, TERMINAL, JobStatus
from jobs.transitions import job_event_add, job_transition
from jobs.wakeups import tick_request

STOP_TASK = task_names.JOB_STOP
HALT_TASK = task_names.JOB_HALT
# --- completion and retry ------------------------------------------------------------------


def _task_summary(task: Job) -> dict:
    return {
        "name": task.name,
        "uuid": str(task.uuid),
        "role": task.task_role,
        "index": task.task_index,
        "status": task.status,
        "slave": task.slave.name if task.slave is not None else None,
        "exitCode": task.exit_code,
        "ports": [m.get("hostPort") for m in task.request["docker"].get("portMappings") or ()],
        "endReason": task.end_reason,
    }


def gang_task_stop(task: Job, reason: str, now: datetime, *, halt: bool = False) -> None:
    """Stop a task the gang no longer needs (the policy decided, or the user acted); ``halt``:
    the gang is being halted, a running task is halted too and a halting one left to end."""
    task.refresh_from_db()
    if halt and task.status in (JobStatus.MUSTHALT, JobStatus.HALTING):
        return
    if halt and task.status == JobStatus.RUNNING:
        with transaction.atomic():
            if job_transition(
                job=task, to=JobStatus.MUSTHALT, message=f"halt requested: {reason}", now=now
            ):
                fire(HALT_TASK, task.pk)
        return
    if task.status in PENDING:
        job_transition(
            job=task, to=JobStatus.CANCELLED, message=reason, fields={"end_reason": reason}, now=now
        )
    elif task.status in HOLDS_RESOURCES and task.status != JobStatus.CANCELLING:
        if job_transition(
            job=task,
            to=JobStatus.CANCELLING,
            message=reason,
            fields={"end_reason": reason},
            now=now,
        ):
            fire(STOP_TASK, task.pk)


def _attempt_record(gang: JobGang, outcome: Outcome, tasks: list[Job], now: datetime) -> dict:
    return {
        "attempt": gang.attempt,
        "status": outcome.status,
        "reason": outcome.reason,
        "ended": utc_z(now),
        "tasks": [
            _task_summary(t) for t in sorted(tasks, key=lambda t: (t.task_role, t.task_index))
        ],
    }


def _new_attempt(gang: JobGang, old: list[Job], now: datetime, why: str = "") -> list[Job]:
    """The tasks of the next attempt: the submitted requests again, queued; ``why`` says why
    when it is no retry (a re-queue for a taken port)."""
    stamp = utc_z(now)
    first = old[0]
    secrets = {
        s.job.task_role: s.image
        for s in JobPullSecret.objects.filter(job__in=old).select_related("job")
    }
    jobs = []
    for item in gang.task_requests:
        request = item["request"]
        jobs.append(
            Job(
                name=item["name"],
                description=item["description"],
                owner_id=first.owner_id,
                project_id=first.project_id,
                deployment_environment=first.deployment_environment,
                request=request,
                status=JobStatus.QUEUED,
                status_updated=now,
                created=now,
                event_times={"created": stamp, "statusUpdated": stamp, JobStatus.QUEUED: stamp},
                gang=gang,
                task_role=item["role"],
                task_index=item["index"],
                gang_attempt=gang.attempt,
                openpai_config=first.openpai_config,
                **columns_from_request(request),
            )
        )
    Job.objects.bulk_create(jobs)
    JobPullSecret.objects.bulk_create(
        JobPullSecret(job=job, image=secrets[job.task_role])
        for job in jobs
        if job.task_role in secrets
    )
    JobEvent.objects.bulk_create(
        JobEvent(
            job=job,
            time=now,
            type=JobEvent.Type.STATUS_CHANGE,
            new_state=JobStatus.QUEUED,
            message=f"attempt {gang.attempt} of gang {gang.name} ("
            + (why or f"retry {gang.attempt - 1 - port_requeues(gang)} of {gang.retry_count}")
            + ")",
        )
        for job in jobs
    )
    return jobs


def gang_update(*, gang_id: int, now: datetime | None = None) -> str | None:
    """A task of the gang changed: apply the completion policy. Returns the gang's status
    when this call decided the attempt, else None."""
    now = now or timezone.now()
    stops: list[tuple[Job, str]] = []
    with transaction.atomic():
        gang = JobGang.objects.select_for_update().filter(pk=gang_id).first()
        if gang is None or gang.status in GANG_FINAL:
            return None
        tasks = list(
            Job.objects.filter(gang=gang, gang_attempt=gang.attempt).select_related("slave")
        )
        outcome = gang_outcome(
            gang.config["taskRoles"],
            [(t.task_role, t.status) for t in tasks],
            # Started together (gangs.launch): a gang from before that rule ran its tasks
            # one by one, started once any ran.
            started=gang.started_attempt >= gang.attempt
            or any(t.started_at is not None for t in tasks),
        )
        # A task that could not start on a port the portal chose: the gang goes back to the
        # queue whole, whatever the policy says of one failed task (gangs.ports).
        requeue = requeue_for_port_clash(gang, tasks)
        if requeue is not None:
            outcome = requeue.outcome
        if outcome is None:
            return None
        if gang.cancelled_by_user:
            outcome = Outcome(JobStatus.CANCELLED, gang.end_reason or "cancelled by its owner")
        record = _attempt_record(gang, outcome, tasks, now)
        if requeue is not None:
            record["portsTaken"] = sorted(requeue.ports)
        reason = f"gang {gang.name} attempt {gang.attempt} {outcome.status}: {outcome.reason}"
        stops = [(t, f"stopped: {reason}") for t in tasks if t.status not in TERMINAL]
        retry = (
            outcome.status == JobStatus.FAILED
            and not gang.cancelled_by_user
            and (requeue is not None or gang.attempt - port_requeues(gang) <= gang.retry_count)
        )
        gang.attempts = [*gang.attempts, record]
        gang.status_updated = now
        if retry:
            gang.attempt += 1
            gang.status = GANG_ACTIVE
            gang.end_reason = ""
        else:
            gang.status = outcome.status
            gang.end_reason = outcome.reason[:1000]
        gang.save(update_fields=["attempts", "status_updated", "attempt", "status", "end_reason"])
        for task in tasks:
            job_event_add(job=task, message=reason[:5000], now=now)
        if retry:
            _new_attempt(gang, tasks, now, why=requeue.why if requeue is not None else "")
            tick_request()
    for task, why in stops:
        gang_task_stop(task, why, now, halt=outcome.status == JobStatus.HALTED)
    return outcome.status


def gang_recheck_all(*, now: datetime | None = None) -> int:
    """Apply the completion policy to every gang in progress with an ended task: the safety
    net when a ``gang_update`` task was lost (a worker killed after the task ended). Run by
    the periodic reconcile; a gang still undecided costs nothing more than this query."""
    ids = set(
        Job.objects.filter(
            gang__status=GANG_ACTIVE,
            gang_attempt=F("gang__attempt"),
            status__in=FINISHED,
        ).values_list("gang_id", flat=True)
    )
    decided = 0
    for gang_id in sorted(ids):
        if gang_update(gang_id=gang_id, now=now) is not None:
            decided += 1
    return decided
