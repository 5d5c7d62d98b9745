"""A job's runs on its slave: launch, finish, stop (cancel), halt, restart.

Called by the thin tasks in ``jobs/tasks.py``. Each function loads the job afresh, does nothing
when the job is no longer in the state it handles (tasks can run twice: a retry after a crash, a
watcher event and a reconcile for the same exit), and changes status only through
``job_transition``.
"""

import logging
import time
from datetime import datetime, timedelta
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from clusters.models import Slave
from clusters.runtime.errors import ContainerNotFound, ContainerNotRunning, RuntimeFailure
from clusters.services import engine_for
from core.faults import crash_point
from core.timefmt import utc_z
from jobs.execution.container_spec import LABEL_JOB, container_spec, job_mounts, pull_target
from jobs.execution.exit_outcome import (
    HALT_EVENT_PREFIX,
    HALT_EXIT_CODE,
    HALT_KILLED,
    HALT_SIGNALLED,
    HALT_SIGNALLING,
    HALT_STOPPING,
    HALT_UNSENT,
    HaltStep,
    exit_outcome,
    halt_step,
)
from jobs.execution.heartbeat import Heartbeat, holder_dead, holder_name
from jobs.execution.logs import job_log_archive_frames, join_frames
from jobs.execution.outputs import job_outputs_archive, job_stdout_archive
from jobs.execution.run_hooks import run_hooks
from jobs.execution.staging import (
    job_container_start,
    job_inputs_restage,
    start_despite_port_clashes,
)
from jobs.execution.storage import StorageRefused, storage_prepare
from jobs.models import Job, JobEvent, JobPullSecret
from jobs.signals import job_restarted, signal_send_after_commit
from jobs.spec import format_duration
from jobs.states import ON_SLAVE, JobStatus
from jobs.transitions import Stage, job_event_add, job_stage_record, job_transition
from jobs.wakeups import tick_request

log = logging.getLogger(__name__)
S = JobStatus
# How long a finisher waits for the halt worker to say whether the SIGUSR1 it is sending went
# out (an engine call of milliseconds); past it, the worker is taken for dead after sending.
HALT_SIGNAL_ANSWER_WAIT_S = 5.0
LAUNCH_ATTEMPTS = 3


def runtime_work_stale(job: Job, now: datetime, *, unclaimed_ok: bool = False) -> bool:
    """Nobody works on ``job``'s current status any more: its runtime work may be re-driven.

    A heartbeat older than the status belongs to an earlier phase (the launch of a job now
    CANCELLING). Unclaimed work (a task fired on commit, maybe lost in a crash) gets the grace
    period from the status change to be picked up, unless ``unclaimed_ok`` (a q cluster that
    has just started: the claim compare-and-swap keeps a duplicate from doing anything). A
    claim whose holder ran on this host and is gone (``holder_dead``) is stale at once.
    """
    grace = timedelta(seconds=settings.PORTAL_RECOVERY_GRACE_S)
    beat = job.runtime_heartbeat
    if beat is None or beat < job.status_updated:
        return unclaimed_ok or now - job.status_updated >= grace
    return now - beat >= grace or holder_dead(job.runtime_holder)


def _claim(job: Job) -> bool:
    """Take the runtime work of the job's current status unless a live worker holds it.

    Compare-and-swap on the heartbeat, so of two tasks for the same job (a re-drive and a
    late original) exactly one goes on. A claim by a holder of this host whose process is gone
    is free at once: matched by its holder's name, which any claim taken since has replaced.
    """
    now = timezone.now()
    stale = now - timedelta(seconds=settings.PORTAL_RECOVERY_GRACE_S)
    free = (
        Q(runtime_heartbeat__isnull=True)
        | Q(runtime_heartbeat__lt=F("status_updated"))
        | Q(runtime_heartbeat__lt=stale)
    )
    if job.runtime_holder and holder_dead(job.runtime_holder):
        free |= Q(runtime_holder=job.runtime_holder)
    holder = holder_name()
    won = Job.objects.filter(free, pk=job.pk, status=job.status).update(
        runtime_heartbeat=now, runtime_holder=holder
    )
    if won:
        job.runtime_heartbeat, job.runtime_holder = now, holder
    return won == 1


def _release(job: Job) -> None:
    """Give the claim back when the work stopped unfinished (an unreachable slave): a retry
    (reconcile, the queue, a user's second cancel) may go on at once instead of waiting for
    the claim to go stale."""
    Job.objects.filter(pk=job.pk, runtime_heartbeat__gte=job.runtime_heartbeat).update(
        runtime_heartbeat=None, runtime_holder=""
    )


def _beating(job: Job) -> Heartbeat:
    """Renew the claim while the work runs (only while the job keeps the claimed status and
    the claim is still this process's)."""
    status, holder = job.status, holder_name()

    def beat():
        Job.objects.filter(pk=job.pk, status=status, runtime_holder=holder).update(
            runtime_heartbeat=timezone.now()
        )

    return Heartbeat(beat, settings.PORTAL_RECOVERY_GRACE_S / 5)


def _on_slave(job: Job) -> Slave:
    """The slave of a job these services act on: assigned, or on it (ON_SLAVE)."""
    assert job.slave is not None, f"job {job.pk} has no slave"
    return job.slave


def _load(job_id: int) -> Job | None:
    return (
        Job.objects.select_related("slave", "slave__cluster", "project", "owner")
        .filter(pk=job_id)
        .first()
    )


def _fail(job: Job, reason: str, **fields) -> bool:
    return job_transition(
        job=job, to=S.FAILED, message=reason, fields={"end_reason": reason[:1000], **fields}
    )


# --- launch --------------------------------------------------------------------------------


def _prepare_storage(job: Job) -> list:
    """Resolve mounts on this slave and create their folders with the project's group, never
    following a link (``jobs.execution.storage``); runs right before ``engine.run``."""
    mounts = job_mounts(job, _on_slave(job))
    if not _on_slave(job).docker_url.startswith("unix://"):
        return mounts  # a remote slave's folders live on that machine (documented)
    base = Path(settings.PORTAL_STORAGE_BASE)
    return [storage_prepare(mount=mount, gid=job.project.gid, base=base) for mount in mounts]


def _ensure_image(engine, job: Job) -> None:
    target = pull_target(job)
    # Credentials its app reads on the slave (an OpenPAI job's authFile: gangs.authfile),
    # before the pull even when the image is present (a bad file fails the job the same way
    # always).
    auth = run_hooks().pull_credentials(job)
    if engine.image_present(target.reference):
        return
    username, password = target.username, target.password
    note = ""
    if auth is not None:
        username, password = auth.username, auth.password
        note = f" ({auth.source})" if auth.source else ""
    job_event_add(job=job, message=f"pulling {target.reference}{note}")
    engine.pull(target.repository, target.tag, username=username, password=password)


def _adopt(engine, job: Job) -> str | None:
    """The job's existing container (a retried or re-driven launch), started if need be."""
    existing = engine.find_by_label(LABEL_JOB, str(job.uuid))
    if not existing:
        return None
    container = existing[0]
    if not container.running and container.exit_code is None:
        job_inputs_restage(engine=engine, job=job, container_id=container.id)
        if run_hooks().starts_together(job):
            return container.id  # started with its peers (jobs_start_together)
        engine.start(container.id)  # created but never started before a crash
    return container.id


def _start_container(engine, job: Job) -> str:
    """The job's container id: an existing one (a retried launch) or a new one.

    Never two: the container's name is fixed per job (``gpuportal-<uuid>``), so of two
    launches that both found nothing, the engine refuses the second create with 409 Conflict
    and that one adopts the first's container.
    """
    adopted = _adopt(engine, job)
    if adopted is not None:
        return adopted
    _ensure_image(engine, job)
    mounts = _prepare_storage(job)
    spec = container_spec(job, _on_slave(job), mounts)
    try:
        if run_hooks().starts_together(job):
            # Created only: its peers' containers must all exist before any starts.
            container_id = engine.create(spec)
            job_inputs_restage(engine=engine, job=job, container_id=container_id)
            return container_id
        # Inputs of a job from an app are staged between create and start (jobs/staging.py).
        return job_container_start(engine=engine, job=job, spec=spec)
    except RuntimeFailure as failure:
        adopted = _adopt(engine, job) if failure.status_code == 409 else None
        if adopted is None:
            raise
        return adopted


def _launch_with_retries(job: Job):
    """Start (or find) the container; transient engine errors are retried a few times."""
    for attempt in range(LAUNCH_ATTEMPTS):
        try:
            with engine_for(_on_slave(job)) as engine:
                container_id = _start_container(engine, job)
                return container_id, engine.inspect(container_id)
        except RuntimeFailure as failure:
            if failure.permanent or attempt == LAUNCH_ATTEMPTS - 1:
                raise
            time.sleep(min(2**attempt, 5))
    raise AssertionError("unreachable")


def job_launch_run(*, job_id: int) -> None:
    """ASSIGNED -> STARTING -> RUNNING on the assigned slave (idempotent).

    Whoever moves the job to STARTING holds its launch (the heartbeat); a STARTING job is
    taken over only when that holder stopped beating (killed). Whatever goes wrong ends the
    job FAILED with the reason, never left STARTING holding its GPUs and CPUs.
    """
    job = _load(job_id)
    if job is None:
        return
    if job.status == S.ASSIGNED:
        now = timezone.now()  # the claim's stamp equals the status time: this phase's claim
        if not job_transition(
            job=job,
            to=S.STARTING,
            message=f"starting on {_on_slave(job).name}",
            fields={"runtime_heartbeat": now, "runtime_holder": holder_name()},
            now=now,
        ):
            return  # another launch of the same job won
        crash_point("after_starting")
    elif job.status != S.STARTING or not _claim(job):
        return  # not ours to launch, or a live worker is launching it
    try:
        with _beating(job):
            container_id, state = _launch_with_retries(job)
    except StorageRefused as refused:
        _launch_failed(job, f"storage: {refused}")
        return
    except RuntimeFailure as failure:
        _launch_failed(job, f"could not start the container: {failure}")
        return
    except Exception as exc:  # a bug or bad data must not leave the job STARTING
        log.exception("launch of %s failed", job.uuid)
        _launch_failed(job, f"could not start: {type(exc).__name__}: {exc}", remove=True)
        return
    if not state.running and state.exit_code is None:  # created, to start with its peers
        _record_created(job, container_id)
        return
    _record_running(job, container_id, state)


def _record_created(job: Job, container_id: str) -> None:
    """A container that starts with its peers' (``run_hooks().starts_together``) exists: keep
    its id on the job, still STARTING, and tell its app, which starts every one at once when
    the last exists. A job stopped meanwhile has its container removed: it never ran."""
    if not Job.objects.filter(pk=job.pk, status=S.STARTING).update(container_id=container_id):
        _remove_created(job, container_id)
        return
    job.container_id = container_id
    job_event_add(job=job, message=f"container {container_id[:12]} created; starts with its peers")
    run_hooks().container_created(job)


def _remove_created(job: Job, container_id: str) -> None:
    job.refresh_from_db()
    if job.status == S.CANCELLING:
        Job.objects.filter(pk=job.pk).update(container_id=container_id)
        job_stop_run(job_id=job.pk)  # the stop ends it (removing what never started)
        return
    try:
        with engine_for(_on_slave(job)) as engine:
            engine.remove(container_id, force=True)
    except RuntimeFailure:
        log.warning("could not remove the unstarted container of %s", job.uuid, exc_info=True)


def jobs_start_together(*, job_ids: list[int]) -> None:
    """Start the created containers of jobs that start together (a gang's tasks, once every
    one exists: gangs.launch), back to back, then record each RUNNING. A container that
    cannot start (a host port found taken, ...) fails its job as a launch would; the app's
    policy decides for the others."""
    started: list[Job] = []
    for job_id in job_ids:
        job = _load(job_id)
        if job is None or job.status != S.STARTING or not job.container_id:
            continue
        container_id = job.container_id
        try:
            with engine_for(_on_slave(job)) as engine:

                def start(engine=engine, container_id=container_id) -> str:
                    engine.start(container_id)
                    return container_id

                start_despite_port_clashes(engine=engine, job=job, start=start)
        except RuntimeFailure as failure:
            _launch_failed(job, f"could not start the container: {failure}", remove=True)
            continue
        started.append(job)
    for job in started:
        state = _inspect_or_none(job, job.container_id)
        if state is not None:  # else its re-driven launch finds it running and records it
            _record_running(job, job.container_id, state)


def _launch_failed(job: Job, reason: str, *, remove: bool = False) -> None:
    """FAILED (which frees the job's GPUs and CPUs), and the next tick may use them."""
    job.refresh_from_db()
    if job.status == S.STARTING:
        _fail(job, reason)
    if remove:  # it may have got as far as a container
        try:
            with engine_for(_on_slave(job)) as engine:
                for container in engine.find_by_label(LABEL_JOB, str(job.uuid)):
                    engine.remove(container.id, force=True)
        except Exception:
            log.warning("could not remove the container of %s", job.uuid, exc_info=True)
    tick_request()


def _record_running(job: Job, container_id: str, state) -> None:
    now = timezone.now()
    fields = {
        "container_id": container_id,
        "started_at": state.started_at or now,
        "port_mappings": ports_kept(job, state.host_ports),
        "container_pid": state.pid or None,  # 0: it had already stopped
    }
    if job_transition(
        job=job, to=S.RUNNING, message=f"container {container_id[:12]}", fields=fields
    ):
        if job.app_id:  # Tapis' RUNNING stage, for a job from an app
            job_stage_record(job=job, stage=Stage.RUNNING, message=f"container {container_id[:12]}")
        # A die event the watcher got while the job was still STARTING had no RUNNING job to
        # finish (the finish leaves STARTING jobs to their launch); one that comes from now on
        # finds it RUNNING. So look once more: a container that has exited is finished here, at
        # once (its end is recorded exactly once whoever else tries: job_finish_run's claim).
        if state.running:
            state = _inspect_or_none(job, container_id)
        if state is not None and not state.running:
            job_finish_run(job_id=job.pk)
        return
    # Cancelled while starting: remember the container so the stop task can end it.
    Job.objects.filter(pk=job.pk).update(container_id=container_id)
    if job.status == S.CANCELLING:
        job_stop_run(job_id=job.pk)


def _inspect_or_none(job: Job, container_id: str):
    """The container's state now; None when the engine cannot say (the watcher's event or
    reconcile finishes the job then)."""
    try:
        with engine_for(_on_slave(job)) as engine:
            return engine.inspect(container_id)
    except RuntimeFailure as failure:
        log.info("could not look at the container of %s again: %s", job.uuid, failure)
        return None


def ports_kept(job: Job, read: list[dict]) -> list[dict]:
    """The job's port mappings as recorded: those read back from the engine, plus every one
    the request asked for that the engine no longer shows.

    Docker drops a container's published ports from its state when it stops, so a job that
    exited within moments of starting reads back none (or only its fixed host ports, from
    HostConfig). A mapping is then kept as asked: its fixed ``hostPort``, or None for a port
    Docker picked and has released again.
    """
    kept = [dict(p) for p in read]
    unmatched = list(kept)  # each read-back mapping answers one mapping asked for
    asked_all = [
        {"containerPort": a} if isinstance(a, int) else a
        for a in (job.request.get("docker") or {}).get("portMappings") or ()
    ]
    # Fixed host ports first: a mapping Docker picked a port for matches any one left.
    for asked in sorted(asked_all, key=lambda a: a.get("hostPort") is None):
        port = int(str(asked.get("containerPort")).split("/", 1)[0])
        host_port = asked.get("hostPort")
        match = next(
            (
                p
                for p in unmatched
                if p["containerPort"] == port
                and (host_port is None or p["hostPort"] == int(host_port))
            ),
            None,
        )
        if match is not None:
            unmatched.remove(match)
            continue
        kept.append(
            {
                "containerPort": port,
                "hostPort": int(host_port) if host_port is not None else None,
                "hostIp": asked.get("hostIp") or "",
            }
        )
    return kept


# --- finish --------------------------------------------------------------------------------


def _outcome(
    job: Job, exit_code: int, oom: bool, finished_at: datetime | None = None
) -> tuple[str, str]:
    """The end state and its reason for a container that exited with ``exit_code``
    (``jobs.execution.exit_outcome``: after SIGUSR1 only 123 is HALTED; before it, the job's
    own exit code counts). A gang's task stopped because its gang ended (``Job.gang``: the
    app's policy decided) whose container had exited 0 before that is FINISHED: it ran to
    its end with its peers; a user's cancel of any other job that came after its exit but
    before its end was recorded still cancels it."""
    step = _halt_step(job) if job.status == S.HALTING else HaltStep.NONE
    return exit_outcome(
        ended_before_cancel=job.gang_id is not None
        and finished_at is not None
        and finished_at < job.status_updated,
        status=job.status,
        exit_code=exit_code,
        oom=oom,
        step=step,
        cpu_memory_gb=job.cpu_memory_gb,
        halt_grace_s=settings.PORTAL_HALT_GRACE_S,
        cancel_reason=job.end_reason,
    )


def _halt_step(job: Job) -> HaltStep:
    """How far the job's halt got, from the halt worker's events. A SIGUSR1 being sent right
    now (the container may have exited on it before the worker heard back) is waited for."""
    deadline = time.monotonic() + HALT_SIGNAL_ANSWER_WAIT_S
    while True:
        step = halt_step(
            job.events.filter(message__startswith=HALT_EVENT_PREFIX)
            .order_by("id")
            .values_list("message", flat=True)
        )
        if step != HaltStep.SIGNAL_IN_FLIGHT or time.monotonic() >= deadline:
            return step
        time.sleep(0.05)


def _finish_claim(job: Job) -> bool:
    """Take the finish of the job (archive its log and outputs, record its end), or leave it
    to the finisher that has it: the watcher's, reconcile's, the launch's, a stop's or a halt's
    finish may all come for one exit, at once or one after the other.

    Compare-and-swap on ``finish_claimed_at`` across every status the job may still pass
    through (a cancel or a halt arriving meanwhile changes the status, not the claim), so
    exactly one archives; a claim older than the grace period was left by a killed worker
    and is taken over.
    """
    now = timezone.now()
    stale = now - timedelta(seconds=settings.PORTAL_RECOVERY_GRACE_S)
    free = Q(finish_claimed_at__isnull=True) | Q(finish_claimed_at__lt=stale)
    won = Job.objects.filter(free, pk=job.pk, status__in=ON_SLAVE).update(finish_claimed_at=now)
    if won:
        job.finish_claimed_at = now
    return won == 1


def _finish_beating(job: Job) -> Heartbeat:
    """Renew the finish claim while the archive is copied (large outputs take a while)."""

    def beat():
        Job.objects.filter(pk=job.pk, status__in=ON_SLAVE).update(finish_claimed_at=timezone.now())

    return Heartbeat(beat, settings.PORTAL_RECOVERY_GRACE_S / 5)


def _finish_release(job: Job) -> None:
    """Give the claim back when the finish could not go on (an unreachable slave): the next
    try (reconcile) need not wait for it to go stale."""
    Job.objects.filter(pk=job.pk, status__in=ON_SLAVE).update(finish_claimed_at=None)


def job_finish_run(*, job_id: int) -> None:
    """A container stopped: archive its log and outputs, record how it ended, free the room.

    Exactly once per exit, whoever calls (``_finish_claim``). A job still ASSIGNED or STARTING
    is left to its launch, which records RUNNING first and then finishes it at once.
    """
    job = _load(job_id)
    if job is None or job.status not in ON_SLAVE or not job.container_id:
        return
    if job.status in (S.ASSIGNED, S.STARTING):
        return
    try:
        with engine_for(_on_slave(job)) as engine:
            state = engine.inspect(job.container_id)
            if state.running:
                return  # a spurious event: still running
            if not _finish_claim(job):
                return  # another finisher archives it and records its end
            with _finish_beating(job):
                frames = engine.log_frames(job.container_id)
                job_log_archive_frames(job=job, frames=frames)
                # Before the container is removed (in _end): its output folder, into the archive.
                job_outputs_archive(job=job, engine=engine, container_id=job.container_id)
                # tapisjob.out of a job from an app: stdout and stderr as they came.
                job_stdout_archive(job=job, data=join_frames(frames)[0])
    except ContainerNotFound:
        job.refresh_from_db()
        if job.status in ON_SLAVE:
            _fail(job, "the container disappeared from the slave")
            tick_request()
        return
    except RuntimeFailure as failure:
        log.warning("finish of %s deferred: %s", job.uuid, failure)
        if job.finish_claimed_at is not None:
            _finish_release(job)
        return  # the slave is unreachable: reconcile retries
    _end(
        job,
        state.exit_code if state.exit_code is not None else -1,
        state.oom_killed,
        state.finished_at,
    )


# How often the holder of the finish tries again when the status changed under it.
END_ATTEMPTS = 5


def _end(job: Job, exit_code: int, oom: bool, finished_at: datetime | None) -> None:
    """Record the end. The finish's holder is the only one that records it, so a status that
    changed while it archived (a cancel, a halt request) is read again and the end judged on
    it, never left unrecorded."""
    ended = finished_at or timezone.now()
    for _attempt in range(END_ATTEMPTS):
        to, reason = _outcome(job, exit_code, oom, finished_at)
        fields = {"exit_code": exit_code, "ended_at": ended}
        if reason:
            fields["end_reason"] = reason
        with transaction.atomic():
            if job_transition(
                job=job, to=to, message=reason or f"exit code {exit_code}", fields=fields
            ):
                if to == S.HALTED and job.restartable:
                    job_restart_create(job=job)
                tick_request()
                break
        if job.status not in ON_SLAVE:  # ended by someone else (a slave given up as lost)
            return
    else:
        log.warning("end of %s not recorded: its status kept changing", job.uuid)
        return
    kept = run_hooks().kept_container(job)
    if kept is not None:  # kept for inspection (OpenPAI isDebug): reconcile removes it later
        job_event_add(job=job, message=kept.kept)
        return
    _remove_container(job)


def _remove_container(job: Job) -> None:
    try:
        with engine_for(_on_slave(job)) as engine:
            engine.remove(job.container_id)
    except RuntimeFailure as failure:
        log.warning("could not remove container of %s: %s", job.uuid, failure)


def job_restart_create(*, job: Job) -> Job | None:
    """The continuation of a HALTED restartable job: same request, maxDuration reduced."""
    ran = job.run_seconds(timezone.now()) or 0
    remaining = job.max_duration_s - ran
    if remaining < 60:
        job_event_add(job=job, message="not restarted: less than a minute of maxDuration left")
        return None
    request = dict(job.request)
    scheduling = dict(request["scheduling"])
    scheduling["maxDuration"] = format_duration(remaining)
    min_duration = min(job.min_duration_s, remaining)
    scheduling["minDuration"] = format_duration(min_duration)
    request["scheduling"] = scheduling
    now = timezone.now()
    stamp = utc_z(now)
    columns = {
        f.attname: getattr(job, f.attname)
        for f in Job._meta.concrete_fields
        if f.attname in {
            "name", "description", "owner_id", "project_id", "deployment_environment", "gpus",
            "cpus", "cpu_memory_gb", "tmpfs_gb", "gpu_memory_gb", "gpu_models", "features",
            "min_cuda_version", "requested_cluster_id", "requested_slave_name", "interactive",
            "restartable", "allow_halt_without_signal", "not_before", "not_after",
            "bucket_name", "bucket_max", "reservation_ids", "app_id", "app_version", "origin",
            "file_inputs",
        }
    }  # fmt: skip
    follow = Job.objects.create(
        **columns,
        request=request,
        min_duration_s=min_duration,
        max_duration_s=remaining,
        status=S.QUEUED,
        status_updated=now,
        created=now,
        event_times={"created": stamp, "statusUpdated": stamp, S.QUEUED: stamp},
        restart_of=job,
        initial_job_uuid=job.initial_job_uuid or job.uuid,
        restart_count=job.restart_count + 1,
        run_seconds_before=job.run_seconds_before + ran,
    )
    secret = JobPullSecret.objects.filter(job=job).first()
    if secret is not None:
        JobPullSecret.objects.create(job=follow, image=secret.image)
    # Its history starts QUEUED, as a submitted job's does (what `gpulab-cli debug` shows).
    JobEvent.objects.create(
        job=follow,
        time=now,
        type=JobEvent.Type.STATUS_CHANGE,
        new_state=S.QUEUED,
        message=f"restart {follow.restart_count} of {follow.initial_uuid}",
    )
    job_event_add(job=job, message=f"restarted as {follow.uuid}")
    signal_send_after_commit(job_restarted, sender=Job, calls=[{"job": job, "follow": follow}])
    return follow


# --- stop (cancel) and halt ----------------------------------------------------------------


def _find_container(engine, job: Job) -> str | None:
    if job.container_id:
        return job.container_id
    found = engine.find_by_label(LABEL_JOB, str(job.uuid))
    return found[0].id if found else None


def job_stop_run(*, job_id: int) -> None:
    """CANCELLING: SIGTERM, kill after the grace period, then CANCELLED with the log kept."""
    job = _load(job_id)
    if job is None or job.status != S.CANCELLING or not _claim(job):
        return
    try:
        with _beating(job), engine_for(_on_slave(job)) as engine:
            container_id = _find_container(engine, job)
            if container_id is None:
                if job_transition(job=job, to=S.CANCELLED, message=job.end_reason or "cancelled"):
                    tick_request()
                return
            if not job.container_id:
                Job.objects.filter(pk=job.pk).update(container_id=container_id)
                job.container_id = container_id
            state = engine.inspect(container_id)
            if not state.running and state.started_at is None:
                # Created, never started (a gang's task whose peers never all existed): nothing
                # ran, so nothing ended: no exit code, no log or outputs to keep.
                engine.remove(container_id, force=True)
                if job_transition(job=job, to=S.CANCELLED, message=job.end_reason or "cancelled"):
                    tick_request()
                return
            crash_point("during_stop")
            engine.stop(container_id, timeout_s=settings.PORTAL_STOP_GRACE_S)
    except ContainerNotFound:
        if job_transition(job=job, to=S.CANCELLED, message=job.end_reason or "cancelled"):
            tick_request()
        return
    except RuntimeFailure as failure:
        log.warning("stop of %s deferred: %s", job.uuid, failure)
        _release(job)
        return
    job_finish_run(job_id=job.pk)


def job_halt_run(*, job_id: int) -> None:
    """MUSTHALT -> HALTING: SIGUSR1, wait for exit 123 within the grace period, else kill.

    A HALTING job whose halting worker died (its heartbeat stopped) is halted again: SIGUSR1
    once more (the first may never have been sent) and a fresh grace period.
    """
    job = _load(job_id)
    if job is None:
        return
    if job.status == S.MUSTHALT:
        now = timezone.now()
        if not job_transition(
            job=job,
            to=S.HALTING,
            message="halt procedure started",
            fields={"runtime_heartbeat": now, "runtime_holder": holder_name()},
            now=now,
        ):
            return
    elif job.status != S.HALTING or not _claim(job):
        return
    else:
        job_event_add(job=job, message="halt procedure resumed after a worker was lost")
    grace = settings.PORTAL_HALT_GRACE_S
    try:
        with _beating(job), engine_for(_on_slave(job)) as engine:
            container_id = _find_container(engine, job)
            if container_id is None:
                raise ContainerNotFound(f"no container for {job.uuid}")
            if job.allow_halt_without_signal:
                # Written before the stop: from here on any exit counts as HALTED.
                job_event_add(job=job, message=f"{HALT_STOPPING} (allowHaltWithoutSignal)")
                engine.stop(container_id, timeout_s=0)
            else:
                crash_point("during_halt")
                if _signal_halt(engine, job, container_id, grace):
                    _wait_halted(engine, job, container_id, grace)
    except ContainerNotFound:
        pass
    except RuntimeFailure as failure:
        log.warning("halt of %s deferred: %s", job.uuid, failure)
        _release(job)
        return
    job_finish_run(job_id=job.pk)


def _signal_halt(engine, job: Job, container_id: str, grace: float) -> bool:
    """SIGUSR1 to the job, with an event before and one after (``jobs.execution.exit_outcome``):
    an exit after the signal is judged by the halt procedure (only 123 is HALTED), one before
    it by its own exit code. False when the container had already stopped."""
    job_event_add(job=job, message=HALT_SIGNALLING)
    try:
        engine.signal(container_id, "SIGUSR1")
    except ContainerNotRunning:
        job_event_add(job=job, message=f"{HALT_UNSENT}: the job had already ended")
        return False
    except RuntimeFailure as failure:
        job_event_add(job=job, message=f"{HALT_UNSENT}: {failure}"[:5000])
        raise
    job_event_add(
        job=job, message=f"{HALT_SIGNALLED}: exit with code {HALT_EXIT_CODE} within {grace} s"
    )
    return True


def _wait_halted(engine, job: Job, container_id: str, grace: float) -> None:
    """Wait for the signalled job to exit; kill it when the grace period is over."""
    try:
        engine.wait(container_id, timeout_s=grace)
    except ContainerNotRunning:
        pass
    except RuntimeFailure as failure:
        if failure.permanent:
            raise
        # Written before the kill: the finish step reads it to tell our kill from an exit of
        # the job's own.
        job_event_add(job=job, message=f"{HALT_KILLED} {grace} s: killed")
        engine.kill(container_id)
