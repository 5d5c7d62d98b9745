"""Periodic repair: make the database and the slaves agree again after anything was missed.

Per slave: probe it; match its portal-labelled containers to jobs; finish jobs whose container
exited (events lost, watcher down, portal restarted); re-drive the launch, stop or halt of jobs
whose worker was lost (``_redrive``); fail jobs whose container vanished; stop containers whose
job ended or is unknown; and, when a slave has been unreachable for longer than
the grace period, fail its jobs ("slave lost") and restart the restartable ones.

Recovery when a q cluster starts: whatever the previous one was doing when it was killed is
found and finished within seconds, not at the next periodic reconcile.

Every worker of a starting cluster sends django-q2's ``post_spawn``; the first one asks for one
``recover`` task (a compare-and-swap on the lease row, keyed by the cluster's sentinel process,
coalesces the others and a worker spawned again after a timeout). The task reconciles
every slave at once, re-driving work nobody claimed (a launch or stop fired on commit and lost)
and work claimed by a worker of this host that is gone (``jobs.execution.heartbeat.holder_dead``:
the killed cluster's), and asks for a tick (which takes over a tick lease such a worker held).
Only claims this host cannot judge (taken on another host) are waited for: once they must have
gone stale, it reconciles and asks for a tick again.
"""

import logging
import os
import time
import uuid
from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone

from clusters.models import Slave
from clusters.runtime.errors import RuntimeFailure
from clusters.services import engine_for, slave_probe
from core.tasks import fire
from jobs import task_names
from jobs.execution.container_spec import LABEL_INSTANCE, LABEL_JOB, LABEL_SLAVE, LEGACY_INSTANCE
from jobs.execution.heartbeat import holder_here, process_name
from jobs.execution.run_hooks import run_hooks
from jobs.execution.runs import job_finish_run, job_restart_create, runtime_work_stale
from jobs.models import Job, JobEvent, SchedulerLease
from jobs.signals import reconcile_finished
from jobs.states import ON_SLAVE, JobStatus
from jobs.transitions import job_event_add, job_transition
from jobs.wakeups import SCHEDULER_TICK_TASK, tick_request

log = logging.getLogger(__name__)
S = JobStatus
# A launch may still be creating the container: don't call it missing before this.
LAUNCH_GRACE = timedelta(minutes=5)
LAUNCH_TASK = task_names.JOB_LAUNCH
STOP_TASK = task_names.JOB_STOP
HALT_TASK = task_names.JOB_HALT
RECOVER_TASK = task_names.RECOVER


def reconcile_all(now: datetime | None = None, *, unclaimed_ok: bool = False) -> None:
    for slave in Slave.objects.select_related("cluster"):
        try:
            reconcile_slave(slave=slave, now=now, unclaimed_ok=unclaimed_ok)
        except Exception:  # one broken slave must not stop the others
            log.exception("reconcile of slave %s failed", slave.name)
    # Safety nets of apps above jobs: multi-task jobs whose policy update was lost with a
    # worker (gangs/).
    reconcile_finished.send(sender=Job, now=now)


def reconcile_slave(
    *, slave: Slave, now: datetime | None = None, unclaimed_ok: bool = False
) -> None:
    """``unclaimed_ok``: re-drive work nobody claimed at once (a q cluster has just started)."""
    now = now or timezone.now()
    slave_probe(slave=slave, now=now)
    jobs = {
        str(j.uuid): j
        for j in Job.objects.filter(slave=slave, status__in=ON_SLAVE).select_related(
            "slave", "project", "owner"
        )
    }
    if not slave.online:
        _fail_lost_jobs(slave=slave, jobs=list(jobs.values()), now=now)
        return
    try:
        with engine_for(slave) as engine:
            containers = engine.list_by_labels({LABEL_INSTANCE: settings.PORTAL_INSTANCE})
            if settings.PORTAL_INSTANCE != LEGACY_INSTANCE:
                # Started before this installation had its own id: adopted by job uuid below.
                containers += engine.list_by_labels({LABEL_INSTANCE: LEGACY_INSTANCE})
    except RuntimeFailure as failure:
        log.warning("reconcile: cannot list containers on %s: %s", slave.name, failure)
        return
    containers = [c for c in containers if _belongs_to(c, slave=slave, jobs=jobs)]
    seen, live = set(), {}
    for container in containers:
        job_uuid = container.labels.get(LABEL_JOB, "")
        seen.add(job_uuid)
        job = jobs.get(job_uuid)
        if job is None:
            _stop_orphan(slave=slave, container=container, job_uuid=job_uuid, now=now)
        elif (
            not container.running
            and container.exit_code is not None
            and job.status not in (S.ASSIGNED, S.STARTING)  # its launch finishes it (re-driven)
        ):
            if not job.container_id:
                Job.objects.filter(pk=job.pk).update(container_id=container.id)
            job_finish_run(job_id=job.pk)
        else:
            live[job_uuid] = container
    for job_uuid, job in jobs.items():
        if job_uuid in seen and job_uuid not in live:
            continue  # its exited container was just handled
        _redrive(job=job, container=live.get(job_uuid), now=now, unclaimed_ok=unclaimed_ok)
    for job_uuid, job in jobs.items():
        if job_uuid in seen or job.status in (S.ASSIGNED, S.STARTING):
            continue
        if now - job.status_updated < LAUNCH_GRACE and not job.container_id:
            continue
        job.refresh_from_db()
        if job.status in ON_SLAVE and job.status not in (S.ASSIGNED, S.STARTING):
            if job.status == S.CANCELLING:
                job_transition(job=job, to=S.CANCELLED, message="container already gone")
            else:
                job_transition(
                    job=job,
                    to=S.FAILED,
                    message="the container disappeared from the slave",
                    fields={"end_reason": "the container disappeared from the slave"},
                )
            tick_request()


def _belongs_to(container, *, slave: Slave, jobs: dict[str, Job]) -> bool:
    """Only this portal's containers of this slave: other slaves on the same engine and other
    portals on the same host are none of its business. A container from before containers
    carried their instance id and slave id is this slave's only when its job (a uuid: unique
    across portals) runs here, and is never stopped as a stray: nothing proves it is ours."""
    owner = container.labels.get(LABEL_SLAVE)
    if owner is None or container.labels.get(LABEL_INSTANCE) != settings.PORTAL_INSTANCE:
        return owner is None and container.labels.get(LABEL_JOB, "") in jobs
    return owner == str(slave.pk)


def _redrive(*, job: Job, container, now: datetime, unclaimed_ok: bool) -> None:
    """Level-triggered recovery: fire again the task of a state whose work may have been lost
    (a crash between a commit and its enqueue, a worker killed mid-task).

    ASSIGNED/STARTING: launch (it adopts a container that exists: never two). CANCELLING with
    a container still there: stop. MUSTHALT/HALTING with a container still there: halt. Only
    when nobody works on it (``runtime_work_stale``); the task's own claim settles duplicates.
    """
    if job.status in (S.ASSIGNED, S.STARTING):
        task = LAUNCH_TASK
    elif container is None:
        return  # nothing to stop or halt (a vanished container is handled below)
    elif job.status == S.CANCELLING:
        task = STOP_TASK
    elif job.status in (S.MUSTHALT, S.HALTING):
        task = HALT_TASK
    else:
        return
    if not runtime_work_stale(job, now, unclaimed_ok=unclaimed_ok):
        return
    log.warning("reconcile: re-driving %s job %s (%s)", job.status, job.uuid, task)
    job_event_add(
        job=job, message=f"recovery: {job.status} work re-driven", type=JobEvent.Type.WARNING
    )
    fire(task, job.pk)


def _stop_orphan(*, slave: Slave, container, job_uuid: str, now: datetime) -> None:
    """A portal container whose job ended or is unknown: stop it and say so."""
    job = Job.objects.filter(uuid=job_uuid).first() if _is_uuid(job_uuid) else None
    kept = run_hooks().kept_container(job) if job is not None and not container.running else None
    if job is not None and kept is not None:
        if now < kept.until:
            return  # kept for inspection until then (OpenPAI isDebug: gangs.debug)
        job_event_add(job=job, message=kept.removed)
    if container.running or job is None:
        # An exited container of an ended job is just the finish step's leftover: no news.
        message = f"stopped stray container {container.id[:12]} on {slave.name}"
        log.warning("reconcile: %s (job %s)", message, job_uuid or "unknown")
        if job is not None:
            job_event_add(job=job, message=message, type="Warning")
    try:
        with engine_for(slave) as engine:
            engine.remove(container.id, force=True)
    except RuntimeFailure as failure:
        log.warning("reconcile: could not remove %s: %s", container.id[:12], failure)


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
        return True
    except ValueError:
        return False


def _fail_lost_jobs(*, slave: Slave, jobs: list[Job], now: datetime) -> None:
    """Past the grace period, the jobs of an unreachable slave are given up as lost."""
    if not jobs or slave.offline_since is None:
        return
    grace = timedelta(seconds=settings.PORTAL_SLAVE_LOST_GRACE_S)
    if now - slave.offline_since < grace:
        return
    reason = (
        f"slave lost: {slave.name} unreachable since {slave.offline_since:%Y-%m-%d %H:%M:%S} UTC"
    )
    for job in jobs:
        target = S.CANCELLED if job.status == S.CANCELLING else S.FAILED
        if job_transition(
            job=job, to=target, message=reason, fields={"end_reason": reason, "ended_at": now}
        ):
            if target == S.FAILED and job.restartable and job.started_at:
                job_restart_create(job=job)
    tick_request()


# --- recovery when a q cluster starts ----------------------------------------------------------


def recovery_request(**_signal) -> bool:
    """Fire one recovery task per starting q cluster (called in each worker it spawns)."""
    try:
        return _request()
    except Exception:  # a worker that cannot spawn would be respawned forever
        log.exception("could not ask for the recovery pass")
        return False


def _request() -> bool:
    # Workers are children of the cluster's sentinel: it names this cluster, with its start
    # time (a cluster restarted in a container gets the same pids every time).
    cluster = process_name(os.getppid())[:100]
    SchedulerLease.objects.get_or_create(id=1)
    if (
        not SchedulerLease.objects.filter(pk=1)
        .exclude(recovery_by=cluster)
        .update(recovery_by=cluster)
    ):
        return False
    fire(RECOVER_TASK)
    return True


def _claims_stale_in() -> float:
    """Seconds until every claim taken before now (a worker's heartbeat, the tick lease) that
    this host cannot judge is stale: a claim by a worker of this host was re-driven at once if
    its worker is gone, and is left to it if not (should it die later, reconcile sees that)."""
    now = timezone.now()
    job_grace = timedelta(seconds=settings.PORTAL_RECOVERY_GRACE_S)
    claims = [
        (beat, job_grace)
        for beat, holder in Job.objects.filter(
            status__in=ON_SLAVE, runtime_heartbeat__gt=now - job_grace
        ).values_list("runtime_heartbeat", "runtime_holder")
        if beat is not None and not holder_here(holder)  # (set: filtered by it)
    ]
    claims += [
        (acquired, timedelta(seconds=settings.PORTAL_TICK_LEASE_S))
        for acquired, holder in SchedulerLease.objects.exclude(holder="").values_list(
            "acquired_at", "holder"
        )
        if acquired is not None and not holder_here(holder)
    ]
    return max(((last + grace - now).total_seconds() for last, grace in claims), default=0.0)


def recovery_run(*, wait: bool = True) -> None:

    # A tick of its own, not tick_request: the killed cluster may have left "a tick is pending".
    reconcile_all(unclaimed_ok=True)
    fire(SCHEDULER_TICK_TASK)
    pause = _claims_stale_in()
    if not wait or pause <= 0:
        return
    # Live workers keep renewing theirs, so this waits at most one grace period.
    limit = max(settings.PORTAL_RECOVERY_GRACE_S, settings.PORTAL_TICK_LEASE_S)
    time.sleep(min(pause, limit) + 0.5)
    reconcile_all(unclaimed_ok=True)
    fire(SCHEDULER_TICK_TASK)
