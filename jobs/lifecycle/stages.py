"""Tapis' job stages, recorded beside the portal's own states.

The portal's state machine (jobs/states.py) decides what a job may do; the stages say what the
portal is doing for it in Tapis' words (PROCESSING_INPUTS, STAGING_INPUTS, ARCHIVING, ...). A
stage is recorded as a job event with ``stage`` set, so it lands in the same timestamped history
as every status change; the Tapis API derives a job's current Tapis status from the latest stage
and the portal state.
"""

from django.db import models
from django.utils import timezone

from jobs.models import JobEvent


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
