"""Launching a gang: ports allocated and peers' PAI_* variables written, then every task; the
tasks' containers are created one by one and started together.

``gang_tasks_assigned`` runs inside the scheduler bridge's transaction that assigned the tasks
(the slaves locked) and fires each task's launch. A launch creates the task's container without
starting it (``gang_starts_together``, asked by jobs.execution.runs through its run hooks) and
says so (``gang_task_created``); the launch that creates the last container starts every one of
them, back to back, in one step (``jobs_start_together``). So no task runs before its peers
exist: a gang whose containers cannot all be created never starts (the attempt fails whole,
gangs.policy), and no task ends before another has started.
"""

from __future__ import annotations

import ipaddress
from datetime import datetime

from clusters.models import Slave
from clusters.runtime.spec import PortPolicy
from clusters.services import site_port_policy
from core.errors import Conflict
from core.tasks import fire
from gangs.models import JobGang
from gangs.openpai_config import env_part, role_ports
from gangs.policy import GANG_FINAL
from gangs.ports import ports_to_avoid
from jobs import task_names
from jobs.execution.runs import jobs_start_together
from jobs.models import Job
from jobs.states import HOLDS_RESOURCES, JobStatus
from jobs.transitions import job_event_add, job_transition

LAUNCH_TASK = task_names.JOB_LAUNCH
# --- launch: ports and peers ---------------------------------------------------------------


def _port_policy() -> PortPolicy:
    return site_port_policy()


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
    """``count`` free ports of the range the portal picks from (PORTAL_AUTO_HOST_PORT_RANGE),
    highest first: fixed ports users ask for are usually low in it, so auto ports keep out
    of their way; never a port the site refuses."""
    low, high = policy.auto_range
    found: list[int] = []
    port = high
    while len(found) < count and port >= low:
        if port not in used and not policy.refuses(port):
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
    slave_ids = {t.slave_id for t in tasks if t.slave_id is not None}  # (assigned: all have one)
    # One set of taken ports for all the gang's slaves: no two tasks of a gang share a port
    # number even on different slaves, so slaves that share a host's port space (several
    # engines on one machine) never collide either; ports are plentiful.
    taken: set[int] = set()
    for in_use in _ports_in_use(slave_ids, {t.pk for t in tasks}).values():
        taken |= in_use
    for task in tasks:
        taken |= _fixed_ports(task.request)
    # Ports an earlier attempt found taken on its slave's machine (gangs.ports).
    taken |= ports_to_avoid(gang)
    used = {pk: taken for pk in slave_ids}
    plan: dict[int, dict] = {}
    for task in sorted(tasks, key=lambda t: (t.task_role, t.task_index)):
        assert task.slave_id is not None and task.slave is not None  # assigned to a slave
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
            first: list[int] = next(iter(info["ports"].values()), [])
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
        assert task.gang_id is not None  # the bridge passes gang tasks only
        by_gang.setdefault(task.gang_id, []).append(task)
    for gang_id in sorted(by_gang):
        gang = by_gang[gang_id][0].gang
        assert gang is not None
        members = list(
            Job.objects.filter(gang_id=gang_id, gang_attempt=gang.attempt).select_related("slave")
        )
        if gang.status in GANG_FINAL or any(t.status != JobStatus.ASSIGNED for t in members):
            # A stale decision left part of the gang out (cancelled meanwhile, another tick):
            # no task of a gang holds room while the others wait.
            for task in members:
                if task.status == JobStatus.ASSIGNED:
                    job_transition(
                        job=task,
                        to=JobStatus.QUEUED,
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
                    to=JobStatus.QUEUED,
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


# --- start: every container created, then all started ---------------------------------------


def gang_starts_together(job: Job) -> bool:
    """Whether this task's container waits for its gang's: a task of the gang's current
    attempt, which has not been started yet (a re-driven launch after the start starts its
    own container, as any job's)."""
    if job.gang_id is None or job.gang_attempt is None:
        return False
    return JobGang.objects.filter(
        pk=job.gang_id, attempt=job.gang_attempt, started_attempt__lt=job.gang_attempt
    ).exists()


def gang_task_created(job: Job) -> list[int]:
    """A task's container was created (not started; jobs.execution.runs): once every task of
    the attempt has its container, start them all in one step (``jobs_start_together``), by
    exactly one worker (compare-and-swap on ``started_attempt``). Returns the task pks it
    started, [] while some are still being created."""
    assert job.gang_id is not None and job.gang_attempt is not None  # a gang's task
    tasks = list(
        Job.objects.filter(gang_id=job.gang_id, gang_attempt=job.gang_attempt).order_by(
            "task_role", "task_index"
        )
    )
    if not tasks or any(t.status != JobStatus.STARTING or not t.container_id for t in tasks):
        return []  # the others are still being created (or the attempt is over: nothing)
    won = JobGang.objects.filter(
        pk=job.gang_id, attempt=job.gang_attempt, started_attempt__lt=job.gang_attempt
    ).update(started_attempt=job.gang_attempt)
    if not won:
        return []  # another worker starts them
    job_event_add(
        job=tasks[0],
        message=f"gang attempt {job.gang_attempt}: all {len(tasks)} containers created, "
        "starting them together",
    )
    pks = [t.pk for t in tasks]
    jobs_start_together(job_ids=pks)
    return pks
