"""Multi-task OpenPAI jobs ("gangs"): one JobGang, its tasks ordinary Jobs (docs/openpai.md).

What lives here, and who calls it:

- ``gang_outcome``: the completion policy (pure): per role ``minFailedTaskCount`` failed tasks
  fail the gang, ``minSucceededTaskCount`` succeeded tasks succeed it, null keeps OpenPAI's
  meaning (never fail / succeed once every task completed);
- ``gang_tasks_assigned``: called by the scheduler bridge (``jobs.scheduling.apply``) inside
  the transaction that assigned the tasks: checks the whole gang is assigned, allocates each
  task's ``portList`` ports on its slave, writes the peers' PAI_* variables into every task's
  request, then fires the launches. A gang that is not whole goes back to the queue;
- ``gang_update``: a task of the gang ended (fired by ``jobs.transitions``): applies the
  completion policy, stops the remaining tasks, records the attempt and starts a new one when
  ``retryCount`` allows (never after a user's cancel);
- ``gang_act``: a user's cancel, halt, hold, release or delete of one task acts on the whole
  gang (``jobs.services`` hands them here).

Every job status change goes through ``jobs.transitions.job_transition``; the gang's own
``status`` is a summary written here only, under a row lock on the gang.
"""

from __future__ import annotations

import ipaddress
import logging
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from clusters.models import Slave
from clusters.runtime.spec import PortPolicy
from jobs import task_names
from jobs.models import Job, JobEvent, JobGang, JobPullSecret
from jobs.request_columns import columns_from_request
from jobs.spec.openpai import env_part, role_ports
from jobs.states import FINISHED, HOLDS_RESOURCES, PENDING, TERMINAL, JobStatus
from jobs.ticks import tick_request
from jobs.transitions import job_event_add, job_transition
from portal.errors import Conflict
from portal.tasks import fire
from portal.timefmt import utc_z

log = logging.getLogger(__name__)
S = JobStatus
LAUNCH_TASK = task_names.JOB_LAUNCH
STOP_TASK = task_names.JOB_STOP
HALT_TASK = task_names.JOB_HALT
# A gang's summary states: in progress (its current attempt's tasks are pending or running),
# or how it ended.
GANG_ACTIVE = S.QUEUED
GANG_FINAL = frozenset({S.FINISHED, S.FAILED, S.CANCELLED, S.HALTED})


def task_job_name(job_name: str, role: str, index: int) -> str:
    """``<jobName>-<role>-<index>``: the task's name as an ordinary job (gpulab-cli jobs)."""
    return f"{job_name}-{role}-{index}"


# --- completion policy (pure) --------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    status: str  # FINISHED, FAILED, CANCELLED or HALTED
    reason: str


def gang_outcome(roles: list[dict], tasks: list[tuple[str, str]]) -> Outcome | None:
    """How the gang ends now, or None while it goes on.

    ``roles``: the config's taskRoles (name, taskNumber, minFailedTaskCount,
    minSucceededTaskCount); ``tasks``: (role, status) of every task of the attempt.
    A cancelled task (maxDuration, an admin) cancels the gang and a halted one halts it; then
    failures are looked at before successes, so a tick that sees both fails the gang.
    """
    for role, status in tasks:
        if status == S.CANCELLED:
            return Outcome(S.CANCELLED, f"task of role {role} was cancelled")
    for role, status in tasks:
        if status == S.HALTED:
            return Outcome(S.HALTED, f"task of role {role} was halted")
    failed = {r["name"]: 0 for r in roles}
    succeeded = {r["name"]: 0 for r in roles}
    for role, status in tasks:
        if status == S.FAILED:
            failed[role] = failed.get(role, 0) + 1
        elif status == S.FINISHED:
            succeeded[role] = succeeded.get(role, 0) + 1
    for r in roles:
        wanted = r.get("minFailedTaskCount")
        if wanted is not None and failed[r["name"]] >= wanted:
            return Outcome(
                S.FAILED,
                f"{failed[r['name']]} task(s) of role {r['name']} failed "
                f"(minFailedTaskCount {wanted})",
            )
    for r in roles:
        wanted = r.get("minSucceededTaskCount")
        if wanted is not None and succeeded[r["name"]] >= wanted:
            return Outcome(
                S.FINISHED,
                f"{succeeded[r['name']]} task(s) of role {r['name']} succeeded "
                f"(minSucceededTaskCount {wanted})",
            )
    if tasks and all(status in TERMINAL for _, status in tasks):
        # null minFailedTaskCount: "the job always succeeds regardless of any task failure";
        # null minSucceededTaskCount: it succeeds once every task completed.
        bad = sum(failed.values())
        return Outcome(
            S.FINISHED,
            "all tasks completed"
            + (f" ({bad} failed, no minFailedTaskCount reached)" if bad else ""),
        )
    return None


# --- launch: ports and peers ---------------------------------------------------------------


def _port_policy() -> PortPolicy:
    return PortPolicy.parse(
        host_port_range=settings.PORTAL_HOST_PORT_RANGE,
        reserved=settings.PORTAL_RESERVED_HOST_PORTS,
        addresses=settings.PORTAL_HOST_PORT_ADDRESSES,
    )


def _fixed_ports(request: dict) -> set[int]:
    return {
        int(m["hostPort"])
        for m in (request.get("docker") or {}).get("portMappings") or ()
        if isinstance(m, dict) and m.get("hostPort") is not None
    }


def _ports_in_use(slave_ids: set[int], exclude: set[int]) -> dict[int, set[int]]:
    """Fixed host ports held on these slaves by jobs that hold resources (not ``exclude``)."""
    used: dict[int, set[int]] = {pk: set() for pk in slave_ids}
    rows = (
        Job.objects.filter(slave_id__in=slave_ids, status__in=HOLDS_RESOURCES)
        .exclude(pk__in=exclude)
        .values_list("slave_id", "request__docker__portMappings")
    )
    for slave_id, mappings in rows:
        used[slave_id].update(_fixed_ports({"docker": {"portMappings": mappings}}))
    return used


def slave_address(slave: Slave) -> str:
    """PAI_HOST_IP of a task on this slave: the slave's registered host (the address other
    slaves reach it at; docs/openpai.md), its name when none is registered."""
    host = (slave.host or "").strip()
    if host:
        try:
            return str(ipaddress.ip_address(host))
        except ValueError:
            return host
    return slave.name


def _allocate(count: int, used: set[int], policy: PortPolicy) -> list[int]:
    """``count`` free ports of the site's host port range, highest first: fixed ports users
    ask for are usually low in the range, so auto ports keep out of their way."""
    low, high = policy.host_port_range
    found: list[int] = []
    port = high
    while len(found) < count and port >= low:
        if port not in used and port not in policy.reserved:
            found.append(port)
            used.add(port)
        port -= 1
    if len(found) < count:
        raise Conflict("no free host ports left in the site's range on the slave")
    return found


def _task_plan(gang: JobGang, tasks: list[Job]) -> dict[int, dict]:
    """Per task: its ports by label (allocated now on its slave) and its address."""
    roles = {r["name"]: r for r in gang.config["taskRoles"]}
    policy = _port_policy()
    slave_ids = {t.slave_id for t in tasks}
    # One set of taken ports for all the gang's slaves: no two tasks of a gang share a port
    # number even on different slaves, so slaves that share a host's port space (several
    # engines on one machine) never collide either; ports are plentiful.
    taken: set[int] = set()
    for ports in _ports_in_use(slave_ids, {t.pk for t in tasks}).values():
        taken |= ports
    for task in tasks:
        taken |= _fixed_ports(task.request)
    used = {pk: taken for pk in slave_ids}
    plan: dict[int, dict] = {}
    for task in sorted(tasks, key=lambda t: (t.task_role, t.task_index)):
        ports: dict[str, list[int]] = {}
        for item in role_ports(roles[task.task_role]):
            if item["hostPorts"][0] is not None:
                ports[item["label"]] = list(item["containerPorts"])
            else:
                ports[item["label"]] = _allocate(
                    len(item["containerPorts"]), used[task.slave_id], policy
                )
        plan[task.pk] = {"ports": ports, "address": slave_address(task.slave)}
    return plan


def peer_environment(config: dict, tasks: list[Job], plan: dict[int, dict]) -> dict[str, str]:
    """The variables that need every task placed: PAI_HOST_IP_<role>_<index>,
    PAI_PORT_LIST_<role>_<index>_<label> of every task, and PAI_TASK_ROLE_<role>_HOST_LIST
    ("address:first port" of each task, in index order: the first port type's first port, as
    OpenPAI's examples use it)."""
    env: dict[str, str] = {}
    by_role: dict[str, list[Job]] = {}
    for task in sorted(tasks, key=lambda t: (t.task_role, t.task_index)):
        by_role.setdefault(task.task_role, []).append(task)
    for role in config["taskRoles"]:
        part = env_part(role["name"])
        hosts = []
        for task in by_role.get(role["name"], []):
            info = plan[task.pk]
            env[f"PAI_HOST_IP_{part}_{task.task_index}"] = info["address"]
            for label, ports in info["ports"].items():
                env[f"PAI_PORT_LIST_{part}_{task.task_index}_{env_part(label)}"] = ",".join(
                    str(p) for p in ports
                )
            first = next(iter(info["ports"].values()), [])
            hosts.append(f"{info['address']}:{first[0]}" if first else info["address"])
        env[f"PAI_TASK_ROLE_{part}_HOST_LIST"] = ",".join(hosts)
    return env


def gang_tasks_assigned(*, job_pks: list[int], now: datetime) -> list[int]:
    """Tasks just assigned by a tick (inside its transaction, the slaves locked): launch every
    gang that is whole, after allocating its ports and writing its peers' variables; put the
    tasks of a gang that is not whole back in the queue. Returns the task pks launched."""
    tasks = list(Job.objects.filter(pk__in=job_pks).select_related("slave", "gang").order_by("pk"))
    launched: list[int] = []
    by_gang: dict[int, list[Job]] = {}
    for task in tasks:
        by_gang.setdefault(task.gang_id, []).append(task)
    for gang_id in sorted(by_gang):
        gang = by_gang[gang_id][0].gang
        members = list(
            Job.objects.filter(gang_id=gang_id, gang_attempt=gang.attempt).select_related("slave")
        )
        if gang.status in GANG_FINAL or any(t.status != S.ASSIGNED for t in members):
            # A stale decision left part of the gang out (cancelled meanwhile, another tick):
            # no task of a gang holds room while the others wait.
            for task in members:
                if task.status == S.ASSIGNED:
                    job_transition(
                        job=task,
                        to=S.QUEUED,
                        message="back to the queue: the rest of its gang was not assigned",
                        fields={"slave": None, "gpu_ids": [], "cpu_ids": []},
                        now=now,
                    )
            continue
        try:
            plan = _task_plan(gang, members)
        except Conflict as error:
            for task in members:
                job_transition(
                    job=task,
                    to=S.QUEUED,
                    message=f"back to the queue: {error}",
                    fields={"slave": None, "gpu_ids": [], "cpu_ids": []},
                    now=now,
                )
            continue
        peers = peer_environment(gang.config, members, plan)
        for task in members:
            request = dict(task.request)
            docker = dict(request["docker"])
            docker["environment"] = {**(docker.get("environment") or {}), **peers}
            # Every port is published at the same number inside and outside the container.
            docker["portMappings"] = [
                {"containerPort": port, "hostPort": port, "hostIp": None}
                for ports in plan[task.pk]["ports"].values()
                for port in ports
            ]
            request["docker"] = docker
            Job.objects.filter(pk=task.pk).update(request=request)
            launched.append(task.pk)
        job_event_add(
            job=members[0],
            message=f"gang {gang.name} attempt {gang.attempt}: all {len(members)} tasks "
            "assigned, ports allocated, launching",
            now=now,
        )
    for pk in launched:
        fire(LAUNCH_TASK, pk)
    return launched


# --- completion and retry ------------------------------------------------------------------


def _task_summary(task: Job) -> dict:
    return {
        "name": task.name,
        "uuid": str(task.uuid),
        "role": task.task_role,
        "index": task.task_index,
        "status": task.status,
        "slave": task.slave.name if task.slave_id else None,
        "exitCode": task.exit_code,
        "ports": [m.get("hostPort") for m in task.request["docker"].get("portMappings") or ()],
        "endReason": task.end_reason,
    }


def _stop(task: Job, reason: str, now: datetime, *, halt: bool = False) -> None:
    """Stop a task the gang no longer needs (the policy decided, or the user acted); ``halt``:
    the gang is being halted, a running task is halted too and a halting one left to end."""
    task.refresh_from_db()
    if halt and task.status in (S.MUSTHALT, S.HALTING):
        return
    if halt and task.status == S.RUNNING:
        with transaction.atomic():
            if job_transition(
                job=task, to=S.MUSTHALT, message=f"halt requested: {reason}", now=now
            ):
                fire(HALT_TASK, task.pk)
        return
    if task.status in PENDING:
        job_transition(
            job=task, to=S.CANCELLED, message=reason, fields={"end_reason": reason}, now=now
        )
    elif task.status in HOLDS_RESOURCES and task.status != S.CANCELLING:
        if job_transition(
            job=task, to=S.CANCELLING, message=reason, fields={"end_reason": reason}, now=now
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


def gang_task_requests(gang: JobGang) -> list[dict]:
    """The tasks as submitted (before ports and peers were written): what a retry runs."""
    return gang.task_requests


def _new_attempt(gang: JobGang, old: list[Job], now: datetime) -> list[Job]:
    """The tasks of the next attempt: the submitted requests again, queued."""
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
                status=S.QUEUED,
                status_updated=now,
                created=now,
                event_times={"created": stamp, "statusUpdated": stamp, S.QUEUED: stamp},
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
            new_state=S.QUEUED,
            message=f"attempt {gang.attempt} of gang {gang.name} (retry {gang.attempt - 1} "
            f"of {gang.retry_count})",
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
        outcome = gang_outcome(gang.config["taskRoles"], [(t.task_role, t.status) for t in tasks])
        if outcome is None:
            return None
        if gang.cancelled_by_user:
            outcome = Outcome(S.CANCELLED, gang.end_reason or "cancelled by its owner")
        record = _attempt_record(gang, outcome, tasks, now)
        reason = f"gang {gang.name} attempt {gang.attempt} {outcome.status}: {outcome.reason}"
        stops = [(t, f"stopped: {reason}") for t in tasks if t.status not in TERMINAL]
        retry = (
            outcome.status == S.FAILED
            and not gang.cancelled_by_user
            and gang.attempt <= gang.retry_count
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
            _new_attempt(gang, tasks, now)
            tick_request()
    for task, why in stops:
        _stop(task, why, now, halt=outcome.status == S.HALTED)
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


# --- what pages and the API show ---------------------------------------------------------


def gang_summary(gang: JobGang) -> dict:
    """The gang's roles x tasks of its current attempt (state, slave, ports, exit code) and
    its ended attempts, JSON-ready (GET /api/portal/gangs/<uuid>/ and the job page)."""
    tasks = list(
        Job.objects.filter(gang=gang, gang_attempt=gang.attempt)
        .select_related("slave")
        .order_by("task_role", "task_index")
    )
    by_role: dict[str, list[Job]] = {}
    for task in tasks:
        by_role.setdefault(task.task_role, []).append(task)
    states = [t.status for t in tasks]
    live = gang.status
    if gang.status == GANG_ACTIVE and any(s in HOLDS_RESOURCES for s in states):
        live = S.RUNNING
    elif gang.status == GANG_ACTIVE and states and all(s == S.ONHOLD for s in states):
        live = S.ONHOLD
    return {
        "uuid": str(gang.uuid),
        "name": gang.name,
        "status": live,
        "attempt": gang.attempt,
        "retryCount": gang.retry_count,
        "endReason": gang.end_reason,
        "taskCounts": {state: states.count(state) for state in sorted(set(states))},
        "roles": [
            {
                "name": role["name"],
                "taskNumber": role["taskNumber"],
                "minFailedTaskCount": role["minFailedTaskCount"],
                "minSucceededTaskCount": role["minSucceededTaskCount"],
                "tasks": [
                    {
                        "name": t.name,
                        "uuid": str(t.uuid),
                        "index": t.task_index,
                        "state": t.status,
                        "slave": t.slave.name if t.slave_id else None,
                        "ports": [
                            m.get("hostPort")
                            for m in t.request["docker"].get("portMappings") or ()
                            if m.get("hostPort") is not None
                        ],
                        "exitCode": t.exit_code,
                    }
                    for t in by_role.get(role["name"], [])
                ],
            }
            for role in gang.config["taskRoles"]
        ],
        "attempts": gang.attempts,
    }


# --- user actions on the whole gang --------------------------------------------------------


def gang_tasks(job: Job) -> list[Job]:
    """Every task of the gang's current attempt (for actions) with their slave."""
    return list(
        Job.objects.filter(gang_id=job.gang_id, gang_attempt=job.gang.attempt)
        .select_related("slave", "owner", "project", "gang")
        .order_by("task_role", "task_index")
    )


def gang_info(job: Job, verb: str) -> str:
    """What the API (header X-Portal-Info) and the pages say after an action on one task."""
    gang = JobGang.objects.get(pk=job.gang_id)
    count = Job.objects.filter(gang=gang, gang_attempt=gang.attempt).count()
    return (
        f"{verb} the whole job {gang.name}: {count} task(s) of attempt {gang.attempt} "
        "(a task of a multi-task OpenPAI job is never acted on alone)"
    )


def gang_cancel(*, job: Job, reason: str, now: datetime | None = None) -> int:
    now = now or timezone.now()
    with transaction.atomic():
        JobGang.objects.filter(pk=job.gang_id).update(
            cancelled_by_user=True, end_reason=reason[:1000]
        )
    tasks = gang_tasks(job)
    acted = 0
    for task in tasks:
        if task.status not in TERMINAL:
            _stop(task, reason, now)
            acted += 1
    if not acted:
        raise Conflict(f"the job {job.gang.name} has already ended and cannot be cancelled")
    tick_request()
    return acted


def gang_halt(*, job: Job, halt_info: dict, now: datetime | None = None) -> int:
    """Halt every running task of the gang (a user's or the scheduler's halt of one of them)."""
    now = now or timezone.now()
    acted = 0
    # One transaction: every task is MUSTHALT before the first halt procedure runs.
    with transaction.atomic():
        for task in gang_tasks(job):
            if task.status != S.RUNNING:
                continue
            info = {**halt_info, "haltedJobUuids": [str(task.uuid)], "time": utc_z(now)}
            if job_transition(
                job=task,
                to=S.MUSTHALT,
                message=f"halt requested: {info.get('reason', 'Unknown')} (whole gang)",
                fields={"halt_events": [*task.halt_events, info]},
                now=now,
            ):
                fire(HALT_TASK, task.pk)
                acted += 1
    return acted


def gang_hold(*, job: Job, who: str, now: datetime | None = None) -> int:
    tasks = gang_tasks(job)
    if any(t.status not in PENDING for t in tasks):
        raise Conflict("only a job whose tasks all wait can be put on hold")
    acted = 0
    with transaction.atomic():
        for task in tasks:
            if task.status == S.QUEUED and job_transition(
                job=task, to=S.ONHOLD, message=f"put on hold by {who} (whole gang)", now=now
            ):
                acted += 1
    return acted


def gang_release(*, job: Job, who: str, now: datetime | None = None) -> int:
    acted = 0
    with transaction.atomic():
        for task in gang_tasks(job):
            if task.status == S.ONHOLD and job_transition(
                job=task, to=S.QUEUED, message=f"released by {who} (whole gang)", now=now
            ):
                acted += 1
        if acted:
            tick_request()
    return acted


def gang_delete(*, job: Job, who: str, now: datetime | None = None) -> int:
    """Hide every task of every attempt. A gang still waiting is revoked first (cancelled, as
    ``gpulab-cli rm`` revokes a job that has not run); one with a task on a slave is refused."""
    now = now or timezone.now()
    tasks = list(Job.objects.filter(gang_id=job.gang_id).exclude(status=S.DELETED))
    if any(t.status in HOLDS_RESOURCES for t in tasks):
        raise Conflict("the job's tasks are on a slave: cancel it first (gpulab-cli cancel)")
    with transaction.atomic():
        if any(t.status in PENDING for t in tasks):
            JobGang.objects.filter(pk=job.gang_id).update(
                cancelled_by_user=True, end_reason=f"revoked by {who}"
            )
            for task in tasks:
                if task.status in PENDING:
                    _stop(task, f"revoked by {who}", now)
        for task in tasks:
            task.refresh_from_db()
            if task.status in FINISHED:
                job_transition(
                    job=task, to=S.DELETED, message=f"deleted by {who} (whole gang)", now=now
                )
    return len(tasks)


__all__ = [
    "GANG_FINAL",
    "Outcome",
    "gang_cancel",
    "gang_delete",
    "gang_halt",
    "gang_hold",
    "gang_outcome",
    "gang_recheck_all",
    "gang_summary",
    "gang_release",
    "gang_tasks_assigned",
    "gang_update",
    "peer_environment",
    "task_job_name",
]
