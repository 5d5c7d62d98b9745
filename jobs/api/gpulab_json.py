"""Jobs in GPULab's JSON shape (docs/gpulab-format.md, sections 1, 3 and 4): the one presenter
that the REST API and the web pages share.

The real ``gpulab-cli`` parses Job objects strictly (an unknown key anywhere fails), so this
module emits exactly GPULab's keys and nothing portal-specific. What a viewer sees depends on
``jobs.selectors.job_sees_full``: members of the job's project (and admins) see the job in full
(registry password as ``XXXX``); other logged-in users see a sanitised copy; anonymous callers
additionally see hosts and ids hidden (GPULab's own rules).

Queries: none for a job loaded with ``select_related("owner", "project", "slave")`` except
``slave.gpus`` for a started job. Lists read plain values (``gpulab_list_queryset`` and
``listed_jobs``): one query for the page and one for its slaves' GPUs.
"""

from __future__ import annotations

import copy
import functools
from collections import namedtuple

from django.conf import settings
from django.db import connection
from django.db.models import ExpressionWrapper, F, JSONField, TextField

from accounts.emails import HIDDEN_EMAIL, email_for_gpulab
from accounts.models import Project, user_urn
from clusters.models import Gpu
from core.timefmt import utc_z
from jobs.models import Job
from jobs.selectors import job_sees_full
from jobs.spec.images import HIDDEN_IMAGE, gpulab_image
from jobs.spec.v2 import EXTRA_FIELDS, RESOURCE_FIELDS
from jobs.spec.v2_scheduling import SCHEDULING_FIELDS
from jobs.states import JobStatus

HIDDEN = "hidden"
HIDDEN_USER_URN = "urn:publicid:IDN+hidden+user+hidden"
HIDDEN_PROJECT_URN = "urn:publicid:IDN+hidden+project+hidden"
ZERO_UUID = "00000000-0000-0000-0000-000000000000"

# eventTimes keys GPULab knows (no ONHOLD or CANCELLING: the client would reject them).
EVENT_TIME_STATES = (
    "QUEUED",
    "ASSIGNED",
    "STARTING",
    "RUNNING",
    "FINISHED",
    "FAILED",
    "CANCELLED",
    "DELETED",
    "MUSTHALT",
    "HALTING",
    "HALTED",
)


def _docker_defaults() -> dict:
    """GPULab's docker keys with their defaults: a fresh dict each time, since answers share
    their values (``_pick``)."""
    return {
        "image": HIDDEN_IMAGE,
        "command": [],
        "environment": {},
        "storage": [],
        "portMappings": [],
        "projectGidVariableName": None,
        "workingDir": None,
        "groupAdd": [],
        "user": None,
    }


DOCKER_KEYS = tuple(_docker_defaults())
HALT_INFO_KEYS = (
    "reason",
    "time",
    "startedJobUuids",
    "haltedJobUuids",
    "slaveName",
    "slaveInstance",
    "startedJobScores",
    "haltedJobScores",
)
PORT_MAPPING_KEYS = ("containerPort", "hostPort", "hostIp")
# The job has been on a slave from STARTING on: state.resources is filled in from then.
_NOT_STARTED = {JobStatus.ONHOLD, JobStatus.QUEUED, JobStatus.ASSIGNED}


# The columns ``job_to_gpulab`` reads. A list loads only these, as plain values: a job row has
# 17 JSON columns (a 50-job page otherwise decoded 850 JSON values, most never shown), and
# Django's deferred-model path built five instances per listed job (job, owner, project, slave,
# explanation: 5 ms of a page's 17 ms of CPU), with whole user and slave rows (password hash,
# TLS key) behind them. tests/api/test_list_matches_reads.py holds the list's items equal to
# single-job reads.
_JOB_COLUMNS = (
    "pk",
    "uuid",
    "name",
    "description",
    "deployment_environment",
    "request",
    "project_id",
    "status",
    "status_updated",
    "event_times",
    "created",
    "slave_id",
    "gpu_ids",
    "cpu_ids",
    "cpu_memory_gb",
    "gpu_memory_gb",
    "tmpfs_gb",
    "container_id",
    "container_pid",
    "port_mappings",
    "halt_events",
    "ignoring_reservation_ids",
    "tally_increment",
    "initial_job_uuid",
    "restart_count",
    "shared_with_viewer",  # job_list_visible_to's annotation: job_sees_full reads it
)
_RELATED_COLUMNS = (
    "owner__username",
    "owner__email",
    "project__name",
    "slave__name",
    "slave__host",
    "slave__instance_id",
    "slave__cluster_id",
    "explanation__lines",
)
LIST_COLUMNS = _JOB_COLUMNS + _RELATED_COLUMNS
_SLAVE_ID = _JOB_COLUMNS.index("slave_id")
# Read as their stored text and decoded by ``_stored_json`` (JSONFields without a decoder).
_JSON_COLUMNS = (
    "request",  # kept as text: job_to_gpulab shows it through _request_of_stored_text
    "event_times",
    "gpu_ids",
    "cpu_ids",
    "port_mappings",
    "halt_events",
    "ignoring_reservation_ids",
    "explanation__lines",
)
_JSON_AT = tuple(LIST_COLUMNS.index(name) for name in _JSON_COLUMNS if name != "request")
# ListedJob's attribute for each job column ("request" holds the stored text).
_ATTRIBUTES = tuple("request_text" if name == "request" else name for name in _JOB_COLUMNS)
_JSON_FIELD = JSONField()  # the decoding every one of them has (no custom decoder)


@functools.lru_cache(maxsize=4096)
def _stored_json(text: str):
    """A JSON column's value from its stored text, remembered by the text. Lists show the same
    jobs request after request (the first pages most), and decoding their JSON was the largest
    part of a page's CPU (12% of a loaded web worker's time on PostgreSQL). Keyed by the whole
    text, an entry is never stale. Answers share the value: the presenter only reads it."""
    # No expression: JSONField's decoding does not use it (django-stubs asks for one).
    return _JSON_FIELD.from_db_value(text, None, connection)  # type: ignore[arg-type]


class ListedJob:
    """One listed job: the attributes ``job_to_gpulab`` reads, from ``LIST_COLUMNS`` values.
    The model's own rules (``initial_uuid``, a project's ``urn``) are borrowed, not copied."""

    __slots__ = (*_ATTRIBUTES, "owner", "project", "slave", "queued_explanations")
    initial_uuid = Job.initial_uuid
    ssh_username = Job.ssh_username
    # Those read here (the other columns are set by name from _ATTRIBUTES).
    request_text: str | None
    slave_id: int | None
    owner: _ListedOwner
    project: _ListedProject
    slave: _ListedSlave | None
    queued_explanations: list[str] | None

    @property
    def request(self):
        return _stored_json(self.request_text) if self.request_text is not None else None


class _ListedOwner:
    __slots__ = ("username", "email")
    username: str
    email: str


class _ListedProject:
    __slots__ = ("name",)
    urn = Project.urn
    name: str


class _ListedSlave:
    __slots__ = ("name", "host", "instance_id", "cluster_id", "gpus")
    name: str
    host: str
    instance_id: str
    cluster_id: int
    gpus: _SlaveGpus


_ListedGpu = namedtuple("_ListedGpu", ("index", "memory_mb"))


class _SlaveGpus(tuple):
    """A listed slave's GPUs (index, memory_mb), read the way the model's ``slave.gpus.all()``
    is."""

    def all(self):
        return self


def gpulab_list_queryset(queryset):
    """``queryset`` as tuples of ``LIST_COLUMNS`` (JSON as text): give a page of them to
    ``listed_jobs``."""
    as_text = {f"_text_{name}": _as_text(name) for name in _JSON_COLUMNS}
    columns = [f"_text_{name}" if name in _JSON_COLUMNS else name for name in LIST_COLUMNS]
    return (
        queryset.select_related(None)
        .prefetch_related(None)
        .annotate(**as_text)
        .values_list(*columns)
    )


def _as_text(name: str) -> ExpressionWrapper:
    # The column itself, without JSONField's decoding (both backends hand its text over).
    return ExpressionWrapper(F(name), output_field=TextField())


def listed_jobs(rows) -> list[ListedJob]:
    """``gpulab_list_queryset`` tuples as ``ListedJob`` objects, the GPUs of their slaves
    (state.resources.gpuMemoryGb) read in one query when any listed job has a slave."""
    width = len(_JOB_COLUMNS)
    slave_ids = {row[_SLAVE_ID] for row in rows} - {None}
    gpus_of: dict[int, list] = {slave_id: [] for slave_id in slave_ids}
    if slave_ids:
        gpus = Gpu.objects.filter(slave_id__in=slave_ids).order_by()  # no join for the order
        for slave_id, index, memory_mb in gpus.values_list("slave_id", "index", "memory_mb"):
            gpus_of[slave_id].append(_ListedGpu(index, memory_mb))
    slaves: dict[int, _ListedSlave] = {}
    jobs = []
    for row in rows:
        row = list(row)
        for at in _JSON_AT:
            if row[at] is not None:
                row[at] = _stored_json(row[at])
        job = ListedJob()
        for name, value in zip(_ATTRIBUTES, row, strict=False):
            setattr(job, name, value)
        username, email, project_name, *slave_values, lines = row[width:]
        job.owner = owner = _ListedOwner()
        owner.username, owner.email = username, email
        job.project = project = _ListedProject()
        project.name = project_name
        job.queued_explanations = lines
        job.slave = None
        if job.slave_id is not None:
            job.slave = slaves.get(job.slave_id)
            if job.slave is None:
                job.slave = slaves[job.slave_id] = slave = _ListedSlave()
                slave.name, slave.host, slave.instance_id, slave.cluster_id = slave_values
                slave.gpus = _SlaveGpus(gpus_of[job.slave_id])
        jobs.append(job)
    return jobs


def job_sanitised_name(job) -> str:
    """The name people outside the job's project see: ``job-`` + the uuid's first 6 chars."""
    return f"job-{str(job.uuid)[:6]}"


def _is_logged_in(viewer) -> bool:
    return bool(viewer is not None and getattr(viewer, "is_authenticated", False))


def job_to_gpulab(job, *, viewer) -> dict:
    """The job as GPULab's Job object, full or sanitised for ``viewer`` (a user or anonymous)."""
    logged_in = _is_logged_in(viewer)
    full = logged_in and job_sees_full(viewer, job)
    return {
        "uuid": str(job.uuid),
        "name": job.name if full else job_sanitised_name(job),
        "description": job.description if full else None,
        "deploymentEnvironment": job.deployment_environment,
        "request": _request_shown(job, full=full),
        "owner": _owner(job, full=full),
        "state": _state(job, full=full, logged_in=logged_in),
        "restartInfo": {"initialJobUuid": job.initial_uuid, "restartCount": job.restart_count},
    }


# --- request ------------------------------------------------------------------------------


def _request_shown(job, *, full: bool) -> dict:
    text = getattr(job, "request_text", None)  # a ListedJob's stored request
    if text is not None:
        return _request_of_stored_text(text, full)
    return _request(job.request or {}, full=full)


@functools.lru_cache(maxsize=4096)
def _request_of_stored_text(text: str, full: bool) -> dict:
    """The shown request of a stored request text, remembered like ``_stored_json``: a pure
    function of the two, and building it was a tenth of a loaded web worker's CPU. Answers
    share the value: nothing changes an answer after it is built."""
    return _request(_stored_json(text) or {}, full=full)


def _pick(source: dict, keys, defaults: dict | None = None) -> dict:
    # No copy of the values: the answer is serialised and thrown away, and copying every nested
    # list and dict of the request cost a 50-job page 7 ms. Callers treat the answer as read-only
    # (the values may be the job's own stored request).
    defaults = defaults or {}
    return {key: source.get(key, defaults.get(key)) for key in keys}


def _request(request: dict, *, full: bool) -> dict:
    resources = _pick(request.get("resources") or {}, RESOURCE_FIELDS)
    for key in ("gpuModel", "features"):
        resources[key] = resources[key] or []
    scheduling = _pick(request.get("scheduling") or {}, SCHEDULING_FIELDS)
    scheduling["reservationIds"] = list(scheduling["reservationIds"] or [])
    extra = _pick(request.get("extra") or {}, EXTRA_FIELDS)
    for key in EXTRA_FIELDS:
        extra[key] = list(extra[key] or [])
    if full:
        docker = _pick(request.get("docker") or {}, DOCKER_KEYS, _docker_defaults())
        # Stored requests already carry XXXX; redact again so no path can ever leak a password.
        # A pinned image is written the one way gpulab-cli's image pattern accepts.
        docker["image"] = gpulab_image(str(docker["image"] or ""))
        docker["portMappings"] = [_port_mapping(p) for p in docker["portMappings"] or []]
        return {"resources": resources, "docker": docker, "scheduling": scheduling, "extra": extra}
    docker = _docker_defaults()
    scheduling["reservationIds"] = [ZERO_UUID] if scheduling["reservationIds"] else []
    scheduling["maxSimultaneousJobs"] = None
    extra = {key: [] for key in EXTRA_FIELDS}
    return {"resources": resources, "docker": docker, "scheduling": scheduling, "extra": extra}


def _port_mapping(value) -> dict:
    if isinstance(value, int):
        value = {"containerPort": value}
    return {key: value.get(key) for key in PORT_MAPPING_KEYS}


# --- owner --------------------------------------------------------------------------------


def _owner(job, *, full: bool) -> dict:
    if not full:
        return {
            "projectUrn": HIDDEN_PROJECT_URN,
            "userUrn": HIDDEN_USER_URN,
            "userEmail": HIDDEN_EMAIL,
        }

    return {
        "projectUrn": job.project.urn,
        "userUrn": user_urn(job.owner.username),
        # GPULab requires an address its client accepts: otherwise the hidden placeholder.
        "userEmail": email_for_gpulab(job.owner.email),
    }


# --- state --------------------------------------------------------------------------------


def _state(job, *, full: bool, logged_in: bool) -> dict:
    return {
        "status": str(job.status),
        "scheduling": _state_scheduling(job, full=full, logged_in=logged_in),
        "eventTimes": _event_times(job),
        "resources": _state_resources(job, full=full, logged_in=logged_in),
    }


def _state_scheduling(job, *, full: bool, logged_in: bool) -> dict:
    slave = job.slave if job.slave_id else None
    ignoring = list(job.ignoring_reservation_ids or [])
    if not full:
        ignoring = [ZERO_UUID for _ in ignoring]
    return {
        "assignedClusterId": slave.cluster_id if slave else None,
        "assignedInstanceId": (slave.instance_id if logged_in else HIDDEN) if slave else None,
        "assignedSlaveName": (slave.name if logged_in else HIDDEN) if slave else None,
        "queuedExplanations": [str(x) for x in job.queued_explanations or []],
        "tallyIncrement": job.tally_increment,
        "haltEvents": [
            _halt_info(h, logged_in=logged_in, fallback_time=utc_z(job.status_updated))
            for h in job.halt_events or []
        ],
        "ignoringReservationIds": ignoring,
    }


HALT_REASONS = (
    "Unknown",
    "User requested fallback manually",
    "Admin requested fallback",
    "Score",
    "Reservation Priority",
    "Private Cluster Priority",
)


def _halt_info(info: dict, *, logged_in: bool, fallback_time: str | None) -> dict:
    """GPULab's HaltInfo; the client requires every field (strings, not null)."""
    out = {key: copy.deepcopy(info.get(key)) for key in HALT_INFO_KEYS}
    for key in ("startedJobUuids", "haltedJobUuids", "startedJobScores", "haltedJobScores"):
        out[key] = list(out[key] or [])
    if out["reason"] not in HALT_REASONS:
        out["reason"] = "Unknown"
    out["time"] = out["time"] or fallback_time
    out["slaveName"] = str(out["slaveName"] or "")
    out["slaveInstance"] = str(out["slaveInstance"] or "")
    if not logged_in:
        out["slaveName"] = HIDDEN if out["slaveName"] else ""
        out["slaveInstance"] = HIDDEN if out["slaveInstance"] else ""
    return out


def _event_times(job) -> dict:
    stored = job.event_times or {}
    times = {
        "created": utc_z(job.created) or stored.get("created"),
        "statusUpdated": utc_z(job.status_updated) or stored.get("statusUpdated"),
    }
    for name in EVENT_TIME_STATES:
        times[name] = stored.get(name)
    return times


def _gpu_memory_gb(job, slave) -> int:
    ids = set(job.gpu_ids or [])
    sizes = [gpu.memory_mb for gpu in slave.gpus.all() if gpu.index in ids] if ids else []
    if sizes:
        return min(sizes) // 1024  # GPULab: rounded down
    return job.gpu_memory_gb or 0


def _state_resources(job, *, full: bool, logged_in: bool) -> dict | None:
    if job.status in _NOT_STARTED or not job.slave_id:
        return None
    if job.status not in (JobStatus.STARTING, JobStatus.RUNNING) and "STARTING" not in (
        job.event_times or {}
    ):
        return None  # ended before it ever started (e.g. cancelled while ASSIGNED)
    slave = job.slave
    resources = {
        "clusterId": slave.cluster_id,
        "gpuIds": [int(i) for i in job.gpu_ids or []],
        "cpuIds": [int(i) for i in job.cpu_ids or []],
        "cpuMemoryGb": job.cpu_memory_gb,
        "gpuMemoryGb": _gpu_memory_gb(job, slave),
        "tmpfsMemGb": job.tmpfs_gb,
        "slaveName": slave.name,
        "slaveHost": slave.host or slave.name,
        "slaveInstanceId": slave.instance_id,
        # The job's container's main process on the slave (Docker's State.Pid at launch; 0
        # when it had already stopped). The portal has no worker threads: workerId 0.
        "slaveInstancePid": job.container_pid or 0,
        "workerId": 0,
        "portMappings": [_port_mapping(p) for p in job.port_mappings or []] if full else [],
    }
    if full and job.status == JobStatus.RUNNING and job.container_id:
        # Where the portal's SSH gateway lets the job's keys into its container (docs/ssh.md).
        # The gateway is also its own jump host: gpulab-cli chooses a proxy when it cannot
        # resolve slaveHost, and then needs the three proxy keys.
        login = job.ssh_username
        resources.update(
            sshHost=settings.PORTAL_SSH_HOST,
            sshPort=settings.PORTAL_SSH_PORT,
            sshUsername=login,
            sshProxyHost=settings.PORTAL_SSH_HOST,
            sshProxyPort=settings.PORTAL_SSH_PORT,
            sshProxyUsername=login,
        )
    if not logged_in:
        resources.update(
            gpuIds=[],
            cpuIds=[],
            slaveName=HIDDEN,
            slaveHost=HIDDEN,
            slaveInstanceId=HIDDEN,
            slaveInstancePid=-1,
            workerId=-1,
        )
    return resources
