"""The multi-task OpenPAI job (a gang): its config, attempts and summary state."""

import uuid

from django.conf import settings
from django.db import models

from jobs.states import JobStatus


class JobGang(models.Model):
    """A multi-task OpenPAI job: its config, attempts and summary state (docs/openpai.md).

    Each task (role x index) of the current attempt is an ordinary Job with ``gang`` set; the
    scheduler places all tasks of a gang in one cycle or none (jobs/scheduler/gang.py), and
    ``gangs.completion`` applies the completion and retry policies. ``status`` is a summary
    written by this app only (compare-and-swap like a job's); tasks change state through
    ``job_transition`` as any job.

    Its table is still ``jobs_jobgang``: the model moved here from ``jobs`` without touching a
    row (gangs.0001_initial, jobs.0022_jobgang_to_gangs).
    """

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    name = models.CharField(max_length=200)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="job_gangs"
    )
    project = models.ForeignKey("accounts.Project", on_delete=models.PROTECT, related_name="+")
    # The canonical OpenPAI config (image credentials masked).
    config = models.JSONField()
    # The tasks as submitted, [{role, index, name, description, request}]: what each attempt
    # runs (a launch writes ports and peers into the running attempt's own copies).
    task_requests = models.JSONField(default=list)
    attempt = models.PositiveIntegerField(default=1)
    # The last attempt whose tasks were started together (gangs.launch.gang_task_created): the
    # compare-and-swap that lets exactly one worker start them, once every container exists.
    started_attempt = models.PositiveIntegerField(default=0)
    retry_count = models.PositiveIntegerField(default=0)
    status = models.CharField(max_length=16, choices=JobStatus.choices)
    end_reason = models.CharField(max_length=1000, blank=True)
    # A user cancelled it: never retried.
    cancelled_by_user = models.BooleanField(default=False)
    # Ended attempts: [{attempt, status, reason, ended, tasks: [{name, uuid, role, index,
    # status, slave, exit_code, ports}]}], oldest first.
    attempts = models.JSONField(default=list, blank=True)
    created = models.DateTimeField()
    status_updated = models.DateTimeField()
    # Resubmitted as a copy of that gang (gangs.resubmit); its page links both ways.
    copy_of = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="copies"
    )

    class Meta:
        db_table = "jobs_jobgang"
        ordering = ["-created", "-id"]

    def __str__(self) -> str:
        return f"gang {self.name} ({self.uuid})"
