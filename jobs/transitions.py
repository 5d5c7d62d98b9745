"""The one service through which every job status changes.

Compare-and-swap on the status column: ``UPDATE ... WHERE pk = ? AND status = <old>``. Two
workers racing on the same job both try; exactly one update matches. Losing is a normal outcome
(the caller sees ``False``), never an exception.

The scheduler tick changes thousands of jobs at once; its bulk variant
(``jobs.scheduler_bridge.apply.job_transition_many``) follows the rules kept here (allowed
moves, event times, ``transition_reason``, ``job_ended``) with the tick's bulk writes.

Tapis' job stages are recorded beside the portal's own states, at the end of this module: the
state machine (jobs/states.py) decides what a job may do; the stages say what the portal is doing
for it in Tapis' words (PROCESSING_INPUTS, STAGING_INPUTS, ARCHIVING, ...). A stage is a job
event with ``stage`` set, so it lands in the same timestamped history as every status change;
the Tapis API derives a job's current Tapis status from the latest stage and the portal state.
"""

from datetime import datetime

from django.db import models, transaction
from django.utils import timezone

from core.errors import Conflict
from core.tasks import fire
from core.timefmt import utc_z
from jobs import task_names
from jobs.models import Job, JobEvent
from jobs.signals import job_status_changed, signal_send_after_commit
from jobs.states import FINISHED as ENDED
from jobs.states import JobStatus, is_allowed

GANG_UPDATE_TASK = task_names.GANG_UPDATE


class TransitionNotAllowed(Conflict):
    def __init__(self, current: str, target: str):
        super().__init__(f"a job in state {current} cannot become {target}")
        self.current = current
        self.target = target


def _cas(job: Job, to: str, fields: dict | None, now: datetime) -> dict | None:
    """Compare-and-swap the status; the written values when this call won, else None."""
    current = job.status
    if not is_allowed(current, to):
        raise TransitionNotAllowed(current, to)
    event_times = dict(job.event_times or {})
    event_times[to] = utc_z(now)
    event_times["statusUpdated"] = utc_z(now)
    values = {"status": to, "status_updated": now, "event_times": event_times, **(fields or {})}
    if Job.objects.filter(pk=job.pk, status=current).update(**values) != 1:
        return None
    return values


# gpulab-cli's `debug` prints only the state of a status change, never its message: the reason
# for these changes is also written as a message event, which it prints ("LOG ERROR: ...").
REASON_EVENT_TYPES: dict[str, str] = {
    JobStatus.FAILED: JobEvent.Type.ERROR,
    JobStatus.CANCELLING: JobEvent.Type.INFO,
    JobStatus.CANCELLED: JobEvent.Type.INFO,
    JobStatus.MUSTHALT: JobEvent.Type.WARNING,
}


def transition_reason(old: str, to: str, message: str) -> tuple[str, str] | None:
    """(event type, message) of the reason event for this change, if it has one."""
    kind = REASON_EVENT_TYPES.get(to)
    if kind is None or not message or (to == JobStatus.CANCELLED and old == JobStatus.CANCELLING):
        return None  # CANCELLED after CANCELLING: the reason was told when cancelling began
    return kind, f"{to}: {message}"[:5000]


def _reason_event(job: Job, old: str, to: str, message: str, now: datetime) -> JobEvent | None:
    reason = transition_reason(old, to, message)
    if reason is None:
        return None
    return JobEvent(job=job, time=now, type=reason[0], message=reason[1])


def job_transition(
    *,
    job: Job,
    to: str,
    message: str = "",
    fields: dict | None = None,
    now: datetime | None = None,
    event_type: str = JobEvent.Type.STATUS_CHANGE,
) -> bool:
    """Move ``job`` from its current (in-memory) status to ``to``.

    ``fields`` are other columns written in the same UPDATE (assignment, exit code, ...).
    Returns True when this call made the change; False when another writer changed the job
    first (the in-memory job is then refreshed). Raises TransitionNotAllowed for a move the
    state machine forbids.
    """
    now = now or timezone.now()
    old = job.status
    with transaction.atomic():
        values = _cas(job, to, fields, now)
        if values is not None:
            JobEvent.objects.create(
                job=job, time=now, type=event_type, new_state=to, message=message[:5000]
            )
            reason = _reason_event(job, old, to, message, now)
            if reason is not None:
                reason.save()
    if values is None:
        job.refresh_from_db()
        return False
    for name, value in values.items():
        setattr(job, name, value)
    # The apps above jobs (notifications: e-mails, webhooks) hear of it once it is committed.
    signal_send_after_commit(job_status_changed, sender=Job, calls=[{"job": job, "status": to}])
    if to in ENDED:
        job_ended(job)
    return True


def job_ended(job: Job) -> None:
    """What follows a job's end, whichever writer ended it: a task of a multi-task OpenPAI job
    has its gang apply its completion policy (the ``jobs.tasks.gang_update`` task, fired once
    this transaction commits, tells the gangs app: ``jobs.signals.gang_task_ended``)."""
    gang_id = job.__dict__.get("gang_id", _UNLOADED)
    if gang_id is _UNLOADED:  # loaded with .only(): one small query, ended jobs only
        gang_id = Job.objects.filter(pk=job.pk).values_list("gang_id", flat=True).first()
    if gang_id is not None:
        fire(GANG_UPDATE_TASK, gang_id)


_UNLOADED = object()


def job_event_add(*, job: Job, message: str, type: str = JobEvent.Type.INFO, now=None) -> JobEvent:
    """Append a message to the job's history (shown by `debug` and on the job page)."""
    return JobEvent.objects.create(
        job=job, time=now or timezone.now(), type=type, message=message[:5000]
    )


# --- Tapis' job stages ------------------------------------------------------------------------


class Stage(models.TextChoices):
    PENDING = "PENDING"
    PROCESSING_INPUTS = "PROCESSING_INPUTS"
    STAGING_INPUTS = "STAGING_INPUTS"
    STAGING_JOB = "STAGING_JOB"
    SUBMITTING_JOB = "SUBMITTING_JOB"
    QUEUED = "QUEUED"
    RUNNING = "RUNNING"
    ARCHIVING = "ARCHIVING"
    BLOCKED = "BLOCKED"
    PAUSED = "PAUSED"
    FINISHED = "FINISHED"
    CANCELLED = "CANCELLED"
    FAILED = "FAILED"


def job_stage_record(*, job, stage: str, message: str = "") -> JobEvent:
    """Append one stage to the job's history (an Info event carrying the stage)."""
    return JobEvent.objects.create(
        job=job,
        time=timezone.now(),
        type=JobEvent.Type.INFO,
        stage=Stage(stage).value,
        message=f"{stage}: {message}" if message else stage,
    )


# --- Tapis status -----------------------------------------------------------------------------

# Stages of the launch, in order: a job being launched shows the latest of them.
LAUNCH_STAGES = (
    Stage.PENDING,
    Stage.PROCESSING_INPUTS,
    Stage.STAGING_INPUTS,
    Stage.STAGING_JOB,
    Stage.SUBMITTING_JOB,
    Stage.QUEUED,
)
_TERMINAL = {
    "FINISHED": Stage.FINISHED,
    "FAILED": Stage.FAILED,
    "CANCELLED": Stage.CANCELLED,
    # Tapis has no "halted" or "hidden": a halted job was stopped by the scheduler, a deleted
    # one was revoked or hidden by its owner.
    "HALTED": Stage.CANCELLED,
    "DELETED": Stage.CANCELLED,
}


def tapis_status(state: str, stage: str = "", *, blocked: bool = False) -> str:
    """The Tapis status of a job in portal ``state`` whose latest recorded stage is ``stage``
    ("" when none). Pure; the table is in docs/tapis.md.

    ``blocked``: a QUEUED job the scheduler holds back for a reason of policy (a reservation,
    a bucket or fair-share limit, a notBefore) rather than for want of free room.
    """
    if state in _TERMINAL:
        return _TERMINAL[state]
    if state == "ONHOLD":
        return Stage.PAUSED
    if state == "QUEUED":
        return Stage.BLOCKED if blocked else Stage.PENDING
    if state in ("ASSIGNED", "STARTING"):
        return stage if stage in LAUNCH_STAGES else Stage.PENDING
    # RUNNING, MUSTHALT, HALTING, CANCELLING: the container runs (or its end is archived).
    return Stage.ARCHIVING if stage == Stage.ARCHIVING else Stage.RUNNING


def job_latest_stage(job) -> str:
    event = job.events.exclude(stage="").order_by("-time", "-id").only("stage").first()
    return event.stage if event is not None else ""


# Words of the scheduler's explanations (jobs/scheduler/state.py, reservations.py) that mean
# the job is held back by policy, which Tapis calls BLOCKED.
BLOCKING_WORDS = ("bucket ", "user limit", "reservation ")


def job_blocked(job, now) -> bool:
    """A QUEUED job waits on a notBefore, a reservation or a limit (not on free room)."""
    if job.not_before is not None and job.not_before > now:
        return True
    return any(word in str(line) for line in job.queued_explanations for word in BLOCKING_WORDS)


def job_tapis_status(job, now) -> str:
    return tapis_status(
        job.status,
        job_latest_stage(job),
        blocked=job.status == "QUEUED" and job_blocked(job, now),
    )


def job_tapis_summary(job, now) -> dict:
    """What the job page shows beside the portal's states: the Tapis status, every stage with
    its time and message, where the job came from and its resubmissions."""
    stages = list(job.events.exclude(stage="").order_by("time", "id")[:200])
    return {
        "status": job_tapis_status(job, now),
        "stages": stages,
        "app_id": job.app_id,
        "app_version": job.app_version,
        "resubmitted_from": job.resubmitted_from,
        "resubmissions": list(job.resubmissions.order_by("created", "id")[:20]),
    }
