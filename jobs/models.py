"""Jobs, their event history, per-user usage and the scheduler's tick lease."""

import uuid
from datetime import datetime

from django.conf import settings
from django.db import models
from django.utils import timezone

from accounts.models import grantee_constraints
from jobs.states import FINISHED, HOLDS_RESOURCES, JobStatus

# Jobs whose run is over: ended, or deleted with its recorded end (a deleted job's status time
# is when it was deleted). The partial index job_ended_runs is on these rows; queries use this
# very condition so that the database can prove the index applies.
ENDED_RUNS = models.Q(status__in=sorted(FINISHED)) | models.Q(
    status=JobStatus.DELETED, ended_at__isnull=False
)


class Job(models.Model):
    """A Docker job: the canonical GPULab v2 request plus the columns the scheduler needs."""

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    name = models.CharField(max_length=200)
    # null, not "": GPULab distinguishes "no description" (null) from an empty one.
    description = models.TextField(blank=True, null=True)  # noqa: DJ001
    # No index of their own on these three foreign keys: the (owner, status), (project, status)
    # and (slave, status) indexes below serve every lookup by them, and each index is one more
    # write per row the scheduler moves (see docs/scheduling.md, Performance).
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="jobs", db_index=False
    )
    project = models.ForeignKey(
        "accounts.Project", on_delete=models.PROTECT, related_name="jobs", db_index=False
    )
    deployment_environment = models.CharField(max_length=32, default="production")
    # The canonical v2 request; a registry password in the image is stored as XXXX here and
    # only in JobPullSecret in full.
    request = models.JSONField()

    # Indexed copies of the request for the scheduler and list filters.
    gpus = models.PositiveIntegerField()
    cpus = models.PositiveIntegerField()
    cpu_memory_gb = models.PositiveIntegerField()
    tmpfs_gb = models.PositiveIntegerField(default=0)
    gpu_memory_gb = models.PositiveIntegerField(null=True, blank=True)
    gpu_models = models.JSONField(default=list, blank=True)
    features = models.JSONField(default=list, blank=True)
    min_cuda_version = models.PositiveIntegerField(null=True, blank=True)
    requested_cluster_id = models.PositiveIntegerField(null=True, blank=True, db_index=True)
    requested_slave_name = models.CharField(max_length=64, blank=True)
    interactive = models.BooleanField(default=False)
    restartable = models.BooleanField(default=False)
    allow_halt_without_signal = models.BooleanField(default=False)
    min_duration_s = models.PositiveIntegerField()
    max_duration_s = models.PositiveIntegerField()
    not_before = models.DateTimeField(null=True, blank=True)
    not_after = models.DateTimeField(null=True, blank=True)
    # No index of its own: bucket counts read the jobs holding resources through the status
    # index, and every index is one more write per submitted job.
    bucket_name = models.CharField(max_length=200, blank=True)
    bucket_max = models.PositiveIntegerField(null=True, blank=True)
    reservation_ids = models.JSONField(default=list, blank=True)

    # State.
    # Indexed through (status, created) only: a status lookup uses its leading column.
    status = models.CharField(max_length=16, choices=JobStatus.choices)
    status_updated = models.DateTimeField()
    event_times = models.JSONField(default=dict, blank=True)
    created = models.DateTimeField()  # indexed by job_list_order (created, id) below
    end_reason = models.CharField(max_length=1000, blank=True)

    # Assignment and run.
    slave = models.ForeignKey(
        "clusters.Slave",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="jobs",
        db_index=False,
    )
    gpu_ids = models.JSONField(default=list, blank=True)
    # When the sampler found the job's GPUs idle for the review window (jobs/execution/metrics.py);
    # flagged to the owner and listed for admins, never acted on automatically.
    gpu_idle_flagged_at = models.DateTimeField("idle GPUs flagged", null=True, blank=True)
    cpu_ids = models.JSONField(default=list, blank=True)
    container_id = models.CharField(max_length=80, blank=True)
    # The container's main process on its slave's host (Docker's State.Pid, read at launch):
    # GPULab's state.resources.slaveInstancePid.
    container_pid = models.PositiveIntegerField(null=True, blank=True)
    exit_code = models.IntegerField(null=True, blank=True)
    port_mappings = models.JSONField(default=list, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    # Seconds run by earlier jobs of the same restart chain (maxDuration counts their sum).
    run_seconds_before = models.PositiveIntegerField(default=0)
    log_archived = models.BooleanField(default=False)
    # The worker launching, stopping or halting the job was alive at this time (it beats every
    # few seconds). Older than PORTAL_RECOVERY_GRACE_S, or older than the status: nobody works
    # on the job and reconcile re-drives it (see docs/runtime.md, Recovery).
    runtime_heartbeat = models.DateTimeField(null=True, blank=True)
    # Who holds that claim: "node:pid:start" of the worker process (jobs.execution.heartbeat).
    # A holder on the same node whose process is gone has let go at once, without the grace.
    runtime_holder = models.CharField(max_length=64, blank=True, default="")
    # The one finisher that archives the ended container's log and outputs and records the end
    # took the job at this time (compare-and-swap, jobs.execution.runs.job_finish_run) and
    # renews it while it works. Any other finisher (the watcher's, reconcile's, a stop's) leaves
    # the job to it, unless the stamp is older than PORTAL_RECOVERY_GRACE_S (its worker died).
    finish_claimed_at = models.DateTimeField(null=True, blank=True)

    # Scheduling information shown to the user (the explanations: JobExplanation).
    halt_events = models.JSONField(default=list, blank=True)
    ignoring_reservation_ids = models.JSONField(default=list, blank=True)
    # Started above a soft quota level, on GPUs no in-limit job could use then: halted first
    # when an in-limit job needs the room (docs/quotas.md). Kept for the run it started.
    borrowed = models.BooleanField(default=False)
    tally_increment = models.FloatField(null=True, blank=True)

    # Restart chain.
    restart_of = models.OneToOneField(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="restarted_as"
    )
    initial_job_uuid = models.UUIDField(null=True, blank=True, db_index=True)
    restart_count = models.PositiveIntegerField(default=0)

    # The canonical OpenPAI config this job was submitted from (docs/openpai.md), extras
    # included; null for GPULab documents. Image credentials are masked here, as in request.
    openpai_config = models.JSONField(null=True, blank=True)

    # A task of a multi-task OpenPAI job: its gang, role, index in the role and the gang's
    # attempt it belongs to; null/empty for every other job. The gang (its config, attempts,
    # policies) lives one floor up in gangs/; a string reference is no import, and the
    # scheduler's queries follow it in SQL (``gang_attempt=F("gang__attempt")``).
    gang = models.ForeignKey(
        "gangs.JobGang", null=True, blank=True, on_delete=models.CASCADE, related_name="tasks"
    )
    task_role = models.CharField(max_length=64, blank=True)
    task_index = models.PositiveIntegerField(null=True, blank=True)
    gang_attempt = models.PositiveIntegerField(null=True, blank=True)
    # Where the job came from when it was not a plain document: a Tapis app (its id and
    # version, the Tapis request as sent, for the Tapis API and resubmit). Plain fields, so
    # jobs never imports the app layer above it (tapis/).
    app_id = models.CharField(max_length=80, blank=True)
    app_version = models.CharField(max_length=64, blank=True)
    origin = models.JSONField(null=True, blank=True)
    # Files copied into the container's input folder before it starts (jobs/execution/staging.py):
    # [{"name", "source", "target"}], source a project-storage path or an allowed URL.
    file_inputs = models.JSONField(default=list, blank=True)
    # The job this one was resubmitted from (Tapis resubmit, the job page's button).
    resubmitted_from = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="resubmissions"
    )
    # One id shared by the jobs of one array submission (a sweep or a {"jobs": [...]} list):
    # the jobs list shows them as one group and acts on them as a whole. Null for a job
    # submitted alone. Never changes, so the index costs nothing when the tick moves a job.
    array_id = models.UUIDField(null=True, blank=True, db_index=True, editable=False)

    # What a page shows of the job to its viewer, set on the instances it renders, never
    # stored (jobs.web.views.common.present and the list, live and gang pages).
    ui_full: bool
    ui_name: str
    ui_owner: str
    ui_project: str
    ui_image: str
    ui_active: bool
    ui_run_seconds: int | None
    ui_queue_position: int | None
    ui_actions: list[str]
    ui_can_act: bool
    ui_gang: dict[str, object]
    ui_gang_task: str
    ui_estimate: "StartEstimate | None"  # the dashboard's queued jobs (jobs/web/dashboard.py)
    ui_estimate_in_s: int | None
    ui_sweep: dict[str, object] | None

    class Meta:
        ordering = ["-created", "-id"]
        indexes = [
            # The list order: a page of the job list reads 50 index entries, not a sort of all
            # jobs (PostgreSQL cannot use the index on created alone for "created, id").
            models.Index(fields=["created", "id"], name="job_list_order"),
            models.Index(fields=["status", "created"]),
            models.Index(fields=["owner", "status"]),
            models.Index(fields=["project", "status"]),
            models.Index(fields=["slave", "status"]),
            # Runs that ended, by when: the tick's usage looks for the ones its users' rows do
            # not hold yet, start estimates read the latest ones' run times. Partial: a job
            # enters it once, when its run is over (no cost to the moves the tick makes).
            models.Index(
                fields=["status_updated"],
                name="job_ended_runs",
                condition=ENDED_RUNS,
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.uuid})"

    @property
    def short_uuid(self) -> str:
        return str(self.uuid)[:6]

    @property
    def initial_uuid(self) -> str:
        return str(self.initial_job_uuid or self.uuid)

    @property
    def ssh_username(self) -> str:
        """The SSH user name that names this job (GPULab's one login per job): what the Job
        JSON tells clients (state.resources.sshUsername) and what the SSH gateway (ssh/access.py)
        reads back, whole or as a unique prefix."""
        return str(self.uuid)

    # --- figures shown and used in several places: each is computed here only ---------------

    @staticmethod
    def held_memory_of(cpu_memory_gb: int, tmpfs_gb: int) -> int:
        """The memory (GB) a job holds on its slave: cpuMemoryGb plus its tmpfs, whose pages are
        charged to the container's memory (the container's limit includes them). For rows
        read with ``values()``; ``held_memory_gb`` for a Job, ``held_memory_gb_sql`` in SQL."""
        return cpu_memory_gb + tmpfs_gb

    @staticmethod
    def held_memory_gb_sql() -> models.Expression:
        """``held_memory_of`` as a query expression (for aggregates over jobs)."""
        return models.F("cpu_memory_gb") + models.F("tmpfs_gb")

    @property
    def held_memory_gb(self) -> int:
        return self.held_memory_of(self.cpu_memory_gb, self.tmpfs_gb)

    @staticmethod
    def run_end_of(*, status: str, ended_at, status_updated, now):
        """When a run ended: the container's finish time when known; ``now`` while the job
        still holds its room; else its last status change. For rows; ``run_end`` for a Job."""
        if ended_at is not None:
            return ended_at
        return now if status in HOLDS_RESOURCES else status_updated

    def run_end(self, now):
        return self.run_end_of(
            status=self.status, ended_at=self.ended_at, status_updated=self.status_updated, now=now
        )

    def run_seconds(self, now) -> int | None:
        """How long this job (not its restart chain: ``run_seconds_before``) has run by
        ``now``; None when it never started."""
        if self.started_at is None:
            return None
        return max(0, int((self.run_end(now) - self.started_at).total_seconds()))

    @property
    def queued_explanations(self) -> list:
        """Why the job waits (or why it could not be scheduled); [] when nothing was said.
        Load lists with ``select_related("explanation")``: one query less per job."""
        try:
            return self.explanation.lines
        except JobExplanation.DoesNotExist:
            return []


class JobExplanation(models.Model):
    """The lines the scheduler last wrote on why a job waits (or why it failed to start).

    A narrow table of its own, not a column of Job: every tick rewrites thousands of these,
    and a row here carries one index, where a Job row carries a dozen and its request JSON
    (measured on a 10k-queue tick on PostgreSQL: seconds as a Job column, a tenth as rows
    here). Written by ``jobs.scheduler_bridge.apply`` only; a job that starts loses its row.
    """

    job = models.OneToOneField(
        Job, primary_key=True, on_delete=models.CASCADE, related_name="explanation"
    )
    lines = models.JSONField(default=list)

    def __str__(self) -> str:
        return f"explanation of job {self.job_id}"


class StartEstimate(models.Model):
    """When the scheduler's forward simulation said a queued job would start
    (``jobs.scheduler.estimate``; made on demand by ``jobs.submit.estimates``).

    The first estimate is kept as made, so that the accuracy of past estimates can be shown
    beside new ones (error = actual ``started_at`` - first estimate); the latest one, with its
    advice, is what the job page and the API show (recomputed when older than
    ``PORTAL_ESTIMATE_TTL_S``).
    """

    job = models.OneToOneField(
        Job, primary_key=True, on_delete=models.CASCADE, related_name="start_estimate"
    )
    first_made_at = models.DateTimeField()
    first_start = models.DateTimeField(null=True, blank=True)
    made_at = models.DateTimeField()
    start = models.DateTimeField(null=True, blank=True)
    # The range around ``start``: the starts with shorter and longer runs of the jobs ahead
    # (the history's 5th and 95th percentiles); latest null: not within the horizon.
    earliest = models.DateTimeField(null=True, blank=True)
    latest = models.DateTimeField(null=True, blank=True)
    note = models.CharField(max_length=300, blank=True)  # why there is no estimate
    advice = models.JSONField(default=list, blank=True)

    def __str__(self) -> str:
        return f"start estimate of job {self.job_id}"


class JobPullSecret(models.Model):
    """The full image string with registry credentials, kept only to pull the image."""

    job = models.OneToOneField(Job, on_delete=models.CASCADE, related_name="pull_secret")
    image = models.CharField(max_length=1000)

    def __str__(self) -> str:
        return f"pull secret of job {self.job_id}"


class JobEvent(models.Model):
    """Append-only history of a job: status changes and messages (behind `debug`)."""

    class Type(models.TextChoices):
        STATUS_CHANGE = "Status Change"
        DEBUG = "Debug"
        INFO = "Info"
        WARNING = "Warning"
        ERROR = "Error"

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="events")
    time = models.DateTimeField()
    type = models.CharField(max_length=16, choices=Type.choices)
    new_state = models.CharField(max_length=16, choices=JobStatus.choices, blank=True)
    message = models.TextField(blank=True)
    # A Tapis stage (jobs/transitions.py) when this event records one; empty otherwise.
    stage = models.CharField(max_length=24, blank=True, default="")

    # Set by the job page's timeline (jobs/web/views/detail.py), never stored.
    ui_label: str
    ui_style: str

    class Meta:
        ordering = ["time", "id"]
        indexes = [models.Index(fields=["job", "time"])]

    def __str__(self) -> str:
        # In the active zone with its name, as the admin shows it (its inline heads each row
        # with this); UTC outside a request.
        at = timezone.localtime(self.time)
        return f"{at:%Y-%m-%d %H:%M:%S %Z} {self.type} {self.new_state} {self.message[:40]}"


class UserUsage(models.Model):
    """A user's decayed, GPU-weighted usage that orders the queue (fair share)."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="usage"
    )
    value = models.FloatField(default=0.0, help_text="Decayed weighted resource-seconds.")
    updated_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"usage of {self.user}: {self.value:.0f}"


class SchedulerLease(models.Model):
    """One row: who runs the scheduler tick now, and whether another tick was asked for meanwhile.

    A row, not a database lock, so the same compare-and-swap works on SQLite and PostgreSQL.
    """

    id = models.PositiveSmallIntegerField(primary_key=True, default=1)
    holder = models.CharField(max_length=64, blank=True)
    # Taken at, then renewed by the holder's heartbeat while it ticks: a holder killed mid-tick
    # leaves a stale stamp that others take over after PORTAL_TICK_LEASE_S.
    acquired_at = models.DateTimeField(null=True, blank=True)
    rerun_requested = models.BooleanField(default=False)
    # A tick task is waiting in the queue: further requests need not enqueue another.
    tick_pending = models.BooleanField(default=False)
    last_tick_at = models.DateTimeField(null=True, blank=True)
    last_tick_seconds = models.FloatField(null=True, blank=True)
    # The q cluster ("host:pid" of its sentinel) that last asked for the recovery pass: all
    # its workers ask when they spawn, one wins; a restarted cluster is a new one.
    recovery_by = models.CharField(max_length=100, blank=True)
    # The next moment a tick could decide differently on its own (a notBefore, a reservation's
    # start, a maxDuration deadline...), written by every tick; the watcher's timer asks for a
    # tick then (jobs.wakeups.wakeup_loop).
    next_wakeup = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"scheduler lease held by {self.holder or 'nobody'}"


class SlaveEventCursor(models.Model):
    """Per slave: the time of the last Docker event the slave watcher handled.

    A watcher that starts (after a restart, a crash) asks the engine for the events since then
    (``jobs.execution.watcher``), so containers that ended while it was down are finished within
    a second of its start instead of at the next reconcile. Times are the engine's own.
    """

    slave = models.OneToOneField(
        "clusters.Slave", primary_key=True, on_delete=models.CASCADE, related_name="+"
    )
    event_time = models.DateTimeField()

    def __str__(self) -> str:
        return f"events of slave {self.slave_id} handled until {self.event_time:%Y-%m-%d %H:%M:%S}"


class SubmitIdempotencyKey(models.Model):
    """A submission's ``Idempotency-Key``: a retried submit answers the first one's answer.

    Written in the same transaction as the job(s) it created, so a key exists exactly when its
    submission was committed; the unique (user, key) constraint makes a concurrent duplicate
    roll back whole. ``request_digest`` tells a retry (same request) from a reuse of the key for
    a different request (refused with 422). The answer is kept as sent (status and body), so
    any kind of submission (one job, an array) can be replayed.
    """

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="submit_keys"
    )
    key = models.CharField(max_length=255)
    request_digest = models.CharField(max_length=64, help_text="SHA-256 of method, query, body.")
    job = models.ForeignKey(Job, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    response_status = models.PositiveSmallIntegerField()
    response_body = models.TextField()
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "key"], name="unique_submit_key_per_user")
        ]

    def __str__(self) -> str:
        return f"idempotency key {self.key[:16]} of {self.user}"


class JobShare(models.Model):
    """A job shared read-only with one user or one project (jobs/user_actions/shares.py): the grantee sees
    it in full (request, history, log, outputs) and cannot act on it."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="shares")
    grantee_user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="job_shares_received",
    )
    grantee_project = models.ForeignKey(
        "accounts.Project",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="job_shares_received",
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="job_shares_made"
    )
    created = models.DateTimeField()

    class Meta:
        ordering = ["created", "id"]
        constraints = grantee_constraints("job", "job_share")
        indexes = [
            models.Index(fields=["grantee_user", "job"], name="job_share_by_user"),
            models.Index(fields=["grantee_project", "job"], name="job_share_by_project"),
        ]

    def __str__(self) -> str:
        grantee = self.grantee_user or self.grantee_project
        return f"job {self.job_id} shared with {grantee}"


class JobSample(models.Model):
    """One reading of a running job's resource use (jobs/execution/metrics.py): rates since the reading
    before it, and the counters the next rate is computed from."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="samples")
    time = models.DateTimeField()
    cpu_percent = models.FloatField(help_text="Of one core: 250 means two and a half busy.")
    memory_mb = models.PositiveIntegerField()
    net_rx_kbps = models.FloatField()
    net_tx_kbps = models.FloatField()
    # [{"index": 0, "percent": 95.0, "memoryUsedMb": 745}, ...] for the job's GPUs.
    gpus = models.JSONField(default=list, blank=True)
    cpu_ns = models.BigIntegerField()
    net_rx_bytes = models.BigIntegerField()
    net_tx_bytes = models.BigIntegerField()

    class Meta:
        ordering = ["time", "id"]
        indexes = [models.Index(fields=["job", "time"])]

    def __str__(self) -> str:
        at = timezone.localtime(self.time)
        return f"{at:%Y-%m-%d %H:%M:%S %Z} cpu {self.cpu_percent}% mem {self.memory_mb} MB"


# --- When a run held its resources --------------------------------------------------------
# When a run held its resources: the one interval fair share (``usage.run_usage``), limits
# (``quota_usage.usage_by_scope``) and the reports (``reports.accounting``) all read.
#
# A run is a Job row that started: it held its GPUs, CPUs and memory from ``started_at`` to its
# end (``Job.run_end_of``: the container's finish time, ``now`` while it still holds its room,
# else its last status change). Restarts are rows of their own; a row that never started held
# nothing. Each reader clips the interval to its own window, here, so the three cannot drift
# apart by a second.


def held_interval(
    run: dict, *, start: datetime | None, end: datetime, now: datetime
) -> tuple[datetime, datetime] | None:
    """The part of ``[start, min(end, now))`` the run held its resources (``start`` None: from
    its start), or None when it held nothing in it."""
    started = run["started_at"]
    if started is None:
        return None  # ASSIGNED: holds room but runs nothing yet
    run_end = Job.run_end_of(
        status=run["status"],
        ended_at=run.get("ended_at"),
        status_updated=run["status_updated"],
        now=now,
    )
    begin = started if start is None else max(start, started)
    stop = min(end, now, run_end)
    if stop <= begin:
        return None
    return begin, stop


def held_seconds(run: dict, *, start: datetime | None, end: datetime, now: datetime) -> float:
    """How many seconds of ``[start, min(end, now))`` the run held its resources."""
    interval = held_interval(run, start=start, end=end, now=now)
    return 0.0 if interval is None else (interval[1] - interval[0]).total_seconds()
