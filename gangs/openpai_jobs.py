"""Jobs as OpenPAI's REST API shows them (docs/openpai.md, "OpenPAI's REST API").

A job submitted from an OpenPAI config (JSON or protocol v2 YAML) is addressed as OpenPAI does,
``{user}~{jobName}``: a multi-task job is its ``JobGang``, a one-task job its ``Job``. Its state
is OpenPAI's (``WAITING``, ``RUNNING``, ``STOPPING``, ``STOPPED``, ``SUCCEEDED``, ``FAILED``),
each task's too, read from the portal's states (``PAI_STATE``), with the retries of its attempts.

Only jobs the caller sees in full are listed or found (their projects' jobs, jobs shared with
them, every job for who may view all): the portal shows other people's jobs sanitised, and
OpenPAI's answers have nothing to sanitise. Each list page costs three queries whatever its
size (the gangs, the one-task jobs, the tasks of the page's gangs).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from django.db.models import Exists, F, OuterRef, Q, QuerySet
from django.urls import reverse

from accounts.permissions import may_view_all_jobs
from accounts.selectors import project_ids_of
from gangs.launch import slave_address
from gangs.models import JobGang
from gangs.policy import GANG_FINAL
from gangs.ports import port_requeues
from jobs.models import Job
from jobs.selectors import job_list_visible_to
from jobs.states import DELETED, TERMINAL, JobStatus

S = JobStatus
# The portal's states as OpenPAI names a task's (and a one-task job's) state: a task is
# WAITING until its container runs; one the portal stopped (the job ended, its user stopped
# it) is STOPPED, as OpenPAI shows a task stopped to complete its attempt.
PAI_STATE: dict[str, str] = {
    S.ONHOLD: "WAITING",
    S.QUEUED: "WAITING",
    S.ASSIGNED: "WAITING",
    S.STARTING: "WAITING",
    S.RUNNING: "RUNNING",
    S.MUSTHALT: "RUNNING",
    S.HALTING: "RUNNING",
    S.CANCELLING: "STOPPING",
    S.CANCELLED: "STOPPED",
    S.HALTED: "STOPPED",
    S.FINISHED: "SUCCEEDED",
    S.FAILED: "FAILED",
    S.DELETED: "STOPPED",
}
# A multi-task job that ended, by its gang's summary state.
PAI_GANG_FINAL: dict[str, str] = {
    S.FINISHED: "SUCCEEDED",
    S.FAILED: "FAILED",
    S.CANCELLED: "STOPPED",
    S.HALTED: "STOPPED",
}
PAI_STATES = ("WAITING", "RUNNING", "STOPPING", "STOPPED", "SUCCEEDED", "FAILED", "UNKNOWN")
# OpenPAI's framework states behind each job state (its "subState").
SUB_STATE = {
    "WAITING": "AttemptCreationPending",
    "RUNNING": "AttemptRunning",
    "STOPPING": "AttemptDeletionPending",
    "STOPPED": "Completed",
    "SUCCEEDED": "Completed",
    "FAILED": "Completed",
}
DEFAULT_VIRTUAL_CLUSTER = "default"


def millis(moment: datetime | None) -> int | None:
    """OpenPAI's times: milliseconds since the Unix epoch."""
    return None if moment is None else int(moment.timestamp() * 1000)


@dataclass
class PaiJob:
    """One OpenPAI job: a gang and the tasks of its current attempt, or a one-task job."""

    name: str
    username: str
    config: dict
    created: datetime
    gang: JobGang | None = None
    tasks: list[Job] = field(default_factory=list)

    @property
    def single(self) -> Job | None:
        return None if self.gang is not None else self.tasks[0]

    @property
    def framework_name(self) -> str:
        return f"{self.username}~{self.name}"


def full_jobs(user) -> QuerySet[Job]:
    """The jobs ``user`` sees in full (the read rule of ``jobs.selectors.job_sees_full``, as a
    query)."""
    visible = job_list_visible_to(user)
    if may_view_all_jobs(user):
        return visible
    return visible.filter(Q(project_id__in=project_ids_of(user)) | Q(shared_with_viewer=True))


def _gangs(user) -> QuerySet[JobGang]:
    shown = full_jobs(user).filter(gang_id=OuterRef("pk")).exclude(status__in=DELETED)
    return (
        JobGang.objects.select_related("owner")
        .annotate(shown=Exists(shown))
        .filter(shown=True)
        .order_by("-created", "-id")
    )


def _singles(user) -> QuerySet[Job]:
    return (
        full_jobs(user)
        .filter(gang__isnull=True, openpai_config__isnull=False)
        .exclude(status__in=DELETED)
        .order_by("-created", "-id")
    )


def _with_tasks(gangs: list[JobGang]) -> list[PaiJob]:
    tasks: dict[int, list[Job]] = {gang.pk: [] for gang in gangs}
    rows = (
        Job.objects.filter(gang_id__in=list(tasks), gang_attempt=F("gang__attempt"))
        .select_related("slave")
        .order_by("task_role", "task_index")
    )
    for task in rows:
        assert task.gang_id is not None  # filtered on the gangs
        tasks[task.gang_id].append(task)
    return [
        PaiJob(
            name=gang.name,
            username=gang.owner.username,
            config=gang.config,
            created=gang.created,
            gang=gang,
            tasks=tasks[gang.pk],
        )
        for gang in gangs
    ]


def _single(job: Job) -> PaiJob:
    config = job.openpai_config or {}
    return PaiJob(
        name=str(config.get("jobName") or job.name),
        username=job.owner.username,
        config=config,
        created=job.created,
        tasks=[job],
    )


def openpai_job_find(user, *, username: str, job_name: str) -> PaiJob | None:
    """The job ``{username}~{job_name}`` names, among those ``user`` sees in full: the newest
    of that name (a name is unique among a user's jobs that are not deleted)."""
    gang = _gangs(user).filter(owner__username=username, name=job_name).first()
    single = _singles(user).filter(owner__username=username, name=job_name).first()
    if gang is not None and (single is None or gang.created >= single.created):
        return _with_tasks([gang])[0]
    return _single(single) if single is not None else None


def openpai_job_list(
    user, *, username: str | None = None, offset: int = 0, limit: int = 100
) -> tuple[list[PaiJob], int]:
    """A page of OpenPAI jobs, newest first, and how many there are in all."""
    gangs, singles = _gangs(user), _singles(user)
    if username:
        gangs = gangs.filter(owner__username=username)
        singles = singles.filter(owner__username=username)
    end = offset + limit
    picked_gangs = list(gangs[:end])
    picked_singles = list(singles.select_related("owner")[:end])
    # Newest first across both, then the page.
    order = sorted(
        [(g.created, g.pk, "g") for g in picked_gangs]
        + [(s.created, s.pk, "s") for s in picked_singles],
        reverse=True,
    )[offset:end]
    gangs_by_pk = {g.pk: g for g in picked_gangs}
    singles_by_pk = {s.pk: s for s in picked_singles}
    on_page = _with_tasks([gangs_by_pk[pk] for _, pk, kind in order if kind == "g"])
    by_gang = {job.gang.pk: job for job in on_page if job.gang is not None}
    page = [by_gang[pk] if kind == "g" else _single(singles_by_pk[pk]) for _, pk, kind in order]
    return page, gangs.count() + singles.count()


# --- states -----------------------------------------------------------------------------------


def job_state(job: PaiJob) -> str:
    if job.single is not None:
        return PAI_STATE[job.single.status]
    gang = job.gang
    assert gang is not None
    statuses = {task.status for task in job.tasks}
    if gang.status in GANG_FINAL:
        if gang.status == S.CANCELLED and not statuses <= TERMINAL:
            return "STOPPING"  # its tasks are still being stopped
        return PAI_GANG_FINAL[gang.status]
    if gang.cancelled_by_user:
        return "STOPPING"
    if statuses & {S.RUNNING, S.MUSTHALT, S.HALTING}:
        return "RUNNING"
    return "WAITING"


def execution_type(job: PaiJob) -> str:
    """STOP once its user stopped it (OpenPAI's executionType), START otherwise."""
    if job.gang is not None:
        return "STOP" if job.gang.cancelled_by_user else "START"
    assert job.single is not None
    return "STOP" if job.single.status in (S.CANCELLING, S.CANCELLED) else "START"


def _retries(job: PaiJob) -> tuple[int, dict[str, int]]:
    """Attempts before the current one; ``retryDetails``: ``user`` the retries retryCount
    allowed after the user's tasks failed, ``platform`` the re-queues for a host port found
    taken (docs/openpai.md, "Launch: ports and peers"), ``resource`` none."""
    if job.gang is None:
        return 0, {"user": 0, "platform": 0, "resource": 0}
    platform = port_requeues(job.gang)
    retries = job.gang.attempt - 1
    return retries, {"user": retries - platform, "platform": platform, "resource": 0}


def _exit_code(job: PaiJob, state: str) -> int | None:
    if state == "SUCCEEDED":
        return 0
    if state not in ("FAILED", "STOPPED"):
        return None
    codes = [t.exit_code for t in job.tasks if t.status == S.FAILED and t.exit_code is not None]
    if codes:
        return codes[0]
    return next((t.exit_code for t in job.tasks if t.exit_code is not None), None)


def _launched(job: PaiJob) -> datetime | None:
    started = [t.started_at for t in job.tasks if t.started_at is not None]
    return min(started) if started else None


def _completed(job: PaiJob, state: str) -> datetime | None:
    if state not in ("STOPPED", "SUCCEEDED", "FAILED"):
        return None
    if job.gang is not None:
        return job.gang.status_updated
    assert job.single is not None
    return job.single.ended_at or job.single.status_updated


def job_summary(job: PaiJob) -> dict:
    """OpenPAI's ``JobSummary`` item (``GET /api/v2/jobs``)."""
    state = job_state(job)
    retries, details = _retries(job)
    roles = job.config.get("taskRoles") or []
    return {
        "name": job.name,
        "username": job.username,
        "state": state,
        "subState": SUB_STATE[state],
        "executionType": execution_type(job),
        "tags": [],
        "retries": retries,
        "retryDetails": details,
        "retryDelayTime": None,
        "submissionTime": millis(job.created),
        "createdTime": millis(job.created),
        "launchedTime": millis(_launched(job)),
        "completedTime": millis(_completed(job, state)),
        "appExitCode": _exit_code(job, state),
        "virtualCluster": job.config.get("virtualCluster") or DEFAULT_VIRTUAL_CLUSTER,
        "totalGpuNumber": sum(r["gpuNumber"] * r["taskNumber"] for r in roles),
        "totalTaskNumber": sum(r["taskNumber"] for r in roles),
        "totalTaskRoleNumber": len(roles),
        "debugId": str(job.gang.uuid if job.gang is not None else job.tasks[0].uuid),
        "jobPriority": None,
    }


def _task_status(job: PaiJob, task: Job, attempt: int) -> dict:
    ports: dict[str, str] = {}
    mappings = [
        m.get("hostPort") for m in (task.request.get("docker") or {}).get("portMappings") or ()
    ]
    config_roles = {r["name"]: r for r in job.config.get("taskRoles") or ()}
    role = config_roles.get(task.task_role or "") or (job.config.get("taskRoles") or [{}])[0]
    at = 0
    for item in role.get("portList") or ():
        numbers = mappings[at : at + item["portNumber"]]
        at += item["portNumber"]
        ports[item["label"]] = ",".join(str(p) for p in numbers if p is not None)
    state = PAI_STATE[task.status]
    return {
        "taskIndex": task.task_index or 0,
        "taskUid": str(task.uuid),
        "taskState": state,
        "containerId": task.container_id or None,
        "containerIp": slave_address(task.slave) if task.slave is not None else None,
        "containerNodeName": task.slave.name if task.slave is not None else None,
        "containerPorts": ports,
        "containerGpus": ",".join(str(g) for g in task.gpu_ids) if task.gpu_ids else None,
        "containerLog": reverse("gpulab-job-log", args=[str(task.uuid)]),
        "containerExitCode": task.exit_code,
        "containerExitDiagnostics": task.end_reason or None,
        "retries": 0,
        "accountableRetries": 0,
        "createdTime": millis(task.created),
        "launchedTime": millis(task.started_at),
        "completedTime": millis(task.ended_at if task.status in TERMINAL else None),
        "attemptId": attempt,
        "attemptState": state,
    }


def job_detail(job: PaiJob) -> dict:
    """OpenPAI's ``JobDetail`` (``GET /api/v2/jobs/{user}~{job}``): the job's status with its
    current attempt (``attemptId`` from 0, as OpenPAI counts), its tasks by role, and the ended
    attempts (``attempts``, the portal's: each attempt's state, reason and tasks)."""
    summary = job_summary(job)
    state = summary["state"]
    gang = job.gang
    attempt = (gang.attempt - 1) if gang is not None else 0
    reason = (gang.end_reason if gang is not None else job.tasks[0].end_reason) or None
    app_launched = _launched(job)
    status = {
        key: summary[key]
        for key in (
            "username",
            "state",
            "subState",
            "executionType",
            "retries",
            "retryDetails",
            "retryDelayTime",
            "submissionTime",
            "createdTime",
            "launchedTime",
            "completedTime",
            "appExitCode",
            "virtualCluster",
        )
    }
    status.update(
        {
            "attemptId": attempt,
            "attemptState": state,
            "appId": summary["debugId"],
            "appCreatedTime": millis(
                min((t.created for t in job.tasks), default=job.created) if job.tasks else None
            ),
            "appLaunchedTime": millis(app_launched),
            "appCompletedTime": summary["completedTime"],
            "appExitDiagnostics": reason,
            "appExitTriggerMessage": reason
            if state in ("SUCCEEDED", "FAILED", "STOPPED")
            else None,
        }
    )
    roles: dict[str, dict] = {}
    for role in job.config.get("taskRoles") or ():
        roles[role["name"]] = {"taskRoleStatus": {"name": role["name"]}, "taskStatuses": []}
    for task in job.tasks:
        name = task.task_role or next(iter(roles), "main")
        roles.setdefault(name, {"taskRoleStatus": {"name": name}, "taskStatuses": []})
        roles[name]["taskStatuses"].append(_task_status(job, task, attempt))
    # Each ended attempt's tasks as they are now (the record was written when the attempt was
    # decided, before its remaining tasks were stopped).
    recorded = [t.get("uuid") for item in (gang.attempts if gang else []) for t in item["tasks"]]
    now_status = {
        str(uuid): status
        for uuid, status in Job.objects.filter(uuid__in=recorded).values_list("uuid", "status")
    }
    ended = [
        {
            "attemptId": item["attempt"] - 1,
            "attemptState": PAI_GANG_FINAL.get(item["status"], "UNKNOWN"),
            "reason": item.get("reason", ""),
            "completedTime": item.get("ended"),
            "tasks": [
                {
                    "taskRoleName": t.get("role"),
                    "taskIndex": t.get("index"),
                    "taskUid": t.get("uuid"),
                    "taskState": PAI_STATE.get(
                        now_status.get(t.get("uuid"), t.get("status")), "UNKNOWN"
                    ),
                    "containerExitCode": t.get("exitCode"),
                }
                for t in item.get("tasks") or ()
            ],
        }
        for item in (gang.attempts if gang is not None else [])
    ]
    return {
        "name": job.name,
        "tags": [],
        "jobStatus": status,
        "taskRoles": roles,
        "attempts": ended,
        "debugId": summary["debugId"],
    }
