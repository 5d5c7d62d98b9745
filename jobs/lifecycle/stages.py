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
