"""Plain-Python validators of GPULab's JSON shapes (docs/gpulab-format.md, sections 1, 3 and 4).

Objects are checked with EXACT key sets (the real gpulab-cli rejects unknown keys, and a missing
key is as bad), values with exact types (``bool`` is not an ``int``). ``check(value, spec)``
returns a list of problems; ``assert_shape`` fails the test listing all of them.

Spec language: a Python type (or tuple of types); ``Obj({...})`` for an object with exactly these
keys (``Opt(spec)`` marks a key that may be absent); ``ListOf(spec)``; ``MapOf(key_re, spec)``;
``Null(spec)`` for spec-or-null; ``AnyOf(a, b)``; ``Re(pattern)`` for a string matching a regex;
``OneOf(values)`` for one of fixed values.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from jobs.states import JobStatus


@dataclass(frozen=True)
class Obj:
    keys: dict


@dataclass(frozen=True)
class Opt:
    spec: object


@dataclass(frozen=True)
class ListOf:
    spec: object


@dataclass(frozen=True)
class MapOf:
    key_re: str
    spec: object


@dataclass(frozen=True)
class Null:
    spec: object


class AnyOf:
    def __init__(self, *specs):
        self.specs = specs


@dataclass(frozen=True)
class Re:
    pattern: str


@dataclass(frozen=True)
class OneOf:
    values: tuple


def check(value, spec, path: str = "$") -> list[str]:
    if isinstance(spec, Null):
        return [] if value is None else check(value, spec.spec, path)
    if isinstance(spec, AnyOf):
        attempts = [check(value, s, path) for s in spec.specs]
        if any(not a for a in attempts):
            return []
        return [f"{path}: matches none of the alternatives: {attempts}"]
    if isinstance(spec, Obj):
        if not isinstance(value, dict):
            return [f"{path}: expected an object, got {type(value).__name__}"]
        problems = []
        for key in value:
            if key not in spec.keys:
                problems.append(f"{path}: unexpected key {key!r}")
        for key, sub in spec.keys.items():
            if key not in value:
                if not isinstance(sub, Opt):
                    problems.append(f"{path}: missing key {key!r}")
                continue
            problems += check(
                value[key], sub.spec if isinstance(sub, Opt) else sub, f"{path}.{key}"
            )
        return problems
    if isinstance(spec, ListOf):
        if not isinstance(value, list):
            return [f"{path}: expected a list, got {type(value).__name__}"]
        return [p for i, item in enumerate(value) for p in check(item, spec.spec, f"{path}[{i}]")]
    if isinstance(spec, MapOf):
        if not isinstance(value, dict):
            return [f"{path}: expected an object, got {type(value).__name__}"]
        problems = []
        for key, item in value.items():
            if not re.fullmatch(spec.key_re, key):
                problems.append(f"{path}: bad key {key!r}")
            problems += check(item, spec.spec, f"{path}.{key}")
        return problems
    if isinstance(spec, Re):
        if not isinstance(value, str) or not re.fullmatch(spec.pattern, value):
            return [f"{path}: {value!r} does not match {spec.pattern}"]
        return []
    if isinstance(spec, OneOf):
        return [] if value in spec.values else [f"{path}: {value!r} not one of {spec.values}"]
    types = spec if isinstance(spec, tuple) else (spec,)
    if isinstance(value, bool) and bool not in types:
        return [f"{path}: expected {types}, got a boolean"]
    if not isinstance(value, types):
        return [f"{path}: expected {types}, got {type(value).__name__} {value!r}"]
    return []


def assert_shape(value, spec) -> None:
    problems = check(value, spec)
    assert not problems, "shape problems:\n" + "\n".join(problems)


# --- building blocks ----------------------------------------------------------------------

TIME = Re(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{3})?Z")  # event times carry ms: core/timefmt.py
UUID = Re(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
STATUS = OneOf(tuple(s.value for s in JobStatus))
NUMBER = (int, float)
STR_LIST = ListOf(str)

PORT_MAPPING = Obj({"containerPort": int, "hostPort": Null(int), "hostIp": Null(str)})

RESOURCES_REQUEST = Obj(
    {
        "cpus": int,
        "gpus": int,
        "cpuMemoryGb": int,
        "gpuMemoryGb": Null(int),
        "gpuModel": STR_LIST,
        "features": STR_LIST,
        "minCudaVersion": Null(int),
        "clusterId": Null(int),
        "slaveName": Null(str),
        "slaveInstanceId": Null(str),
    }
)
STORAGE = AnyOf(
    Obj({"containerPath": str, "hostPath": str}),
    Obj({"hostPath": OneOf(("tmpfs",)), "containerPath": str, "sizeGb": int}),
)
DOCKER = Obj(
    {
        "image": str,
        "command": AnyOf(str, STR_LIST),
        "environment": MapOf(r"[a-zA-Z_][a-zA-Z0-9_]*", (str, int, bool)),
        "storage": ListOf(STORAGE),
        "portMappings": ListOf(PORT_MAPPING),
        "projectGidVariableName": Null(str),
        "workingDir": Null(str),
        "groupAdd": STR_LIST,
        "user": Null(str),
    }
)
SCHEDULING_REQUEST = Obj(
    {
        "interactive": bool,
        "restartable": bool,
        "allowHaltWithoutSignal": bool,
        "minDuration": str,
        "maxDuration": str,
        "notBefore": Null(TIME),
        "notAfter": Null(TIME),
        "maxSimultaneousJobs": Null(Obj({"bucketName": str, "bucketMax": int})),
        "reservationIds": ListOf(UUID),
    }
)
EXTRA = Obj(
    {
        key: STR_LIST
        for key in (
            "sshPubKeys",
            "emailOnQueue",
            "emailOnRun",
            "emailOnEnd",
            "emailOnHalt",
            "emailOnRestart",
        )
    }
)
HALT_INFO = Obj(
    {
        "reason": OneOf(
            (
                "Unknown",
                "User requested fallback manually",
                "Admin requested fallback",
                "Score",
                "Reservation Priority",
                "Private Cluster Priority",
            )
        ),
        "time": TIME,
        "startedJobUuids": ListOf(UUID),
        "haltedJobUuids": ListOf(UUID),
        "slaveName": str,
        "slaveInstance": str,
        "startedJobScores": ListOf(NUMBER),
        "haltedJobScores": ListOf(NUMBER),
    }
)
EVENT_TIMES = Obj(
    {
        "created": TIME,
        "statusUpdated": TIME,
        **{
            name: Null(TIME)
            for name in (
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
        },
    }
)
STATE_RESOURCES = Obj(
    {
        "clusterId": int,
        "gpuIds": ListOf(int),
        "cpuIds": ListOf(int),
        "cpuMemoryGb": int,
        "gpuMemoryGb": int,
        "tmpfsMemGb": int,
        "slaveName": str,
        "slaveHost": str,
        "slaveInstanceId": str,
        "slaveInstancePid": int,
        "workerId": int,
        "portMappings": ListOf(PORT_MAPPING),
        # The SSH gateway (docs/ssh.md): RUNNING jobs, for viewers who see the job in full.
        "sshHost": Opt(str),
        "sshPort": Opt(int),
        "sshUsername": Opt(str),
        "sshProxyHost": Opt(str),
        "sshProxyPort": Opt(int),
        "sshProxyUsername": Opt(str),
    }
)
JOB = Obj(
    {
        "uuid": UUID,
        "name": str,
        "description": Null(str),
        "deploymentEnvironment": str,
        "request": Obj(
            {
                "resources": RESOURCES_REQUEST,
                "docker": DOCKER,
                "scheduling": SCHEDULING_REQUEST,
                "extra": EXTRA,
            }
        ),
        "owner": Obj({"projectUrn": str, "userUrn": str, "userEmail": str}),
        "state": Obj(
            {
                "status": STATUS,
                "scheduling": Obj(
                    {
                        "assignedClusterId": Null(int),
                        "assignedInstanceId": Null(str),
                        "assignedSlaveName": Null(str),
                        "queuedExplanations": STR_LIST,
                        "tallyIncrement": Null(NUMBER),
                        "haltEvents": ListOf(HALT_INFO),
                        "ignoringReservationIds": ListOf(UUID),
                    }
                ),
                "eventTimes": EVENT_TIMES,
                "resources": Null(STATE_RESOURCES),
            }
        ),
        "restartInfo": Obj({"initialJobUuid": UUID, "restartCount": int}),
    }
)
JOB_LIST = Obj(
    {
        "items": ListOf(JOB),
        "page": int,
        "page_size": int,
        "total": int,
        "pages": int,
        "has_next": bool,
    }
)
DEBUG_EVENT = Obj(
    {
        "jobId": UUID,
        "type": OneOf(("Status Change", "Debug", "Info", "Warning", "Error")),
        "time": TIME,
        "newState": Null(STATUS),
        "msg": str,
    }
)
DEBUG_EVENTS = ListOf(DEBUG_EVENT)

RESOURCE_INFO = Obj({"systemTotal": int, "acquired": int, "used": int, "available": int})
GPU_MODEL = Obj({"vendor": str, "name": str, "memoryMb": int})
CLUSTER_INFO = Obj(
    {
        "clusterId": int,
        "deploymentEnvironment": str,
        "comment": str,
        "isPrivate": bool,
        "slaveCount": int,
        "gpuModel": ListOf(GPU_MODEL),
        "worker": RESOURCE_INFO,
        "cpuMemoryMb": RESOURCE_INFO,
        "gpu": RESOURCE_INFO,
        "cpu": RESOURCE_INFO,
        "haveAccess": Null(bool),
        "allowedProjects": Null(STR_LIST),
    }
)
SLAVE_INFO2 = Obj(
    {
        "name": str,
        "instanceId": str,
        "clusterId": int,
        "deploymentEnvironment": str,
        "host": Null(str),
        "comment": Null(str),
        "aliases": STR_LIST,
        "softwareVersion": Null(str),
        "gpuModel": ListOf(GPU_MODEL),
        "cpuModel": STR_LIST,
        "worker": RESOURCE_INFO,
        "cpuMemoryMb": RESOURCE_INFO,
        "gpu": RESOURCE_INFO,
        "cpu": RESOURCE_INFO,
        "lastUpdate": TIME,
        "shuttingDown": bool,
        "cudaVersionFull": Null(str),
        "cudaVersionMajor": Null(int),
        "acceptingJobs": bool,
        "activeJobUuids": Opt(Null(ListOf(UUID))),
    }
)
CLUSTER_LIST = ListOf(CLUSTER_INFO)
SLAVE_LIST = ListOf(SLAVE_INFO2)

# --- portal endpoints ---------------------------------------------------------------------

ERROR = Obj({"error": str, "errors": Opt(STR_LIST)})
VERSION = Obj(
    {
        "latest_client_version": Re(r"\d+\.\d+\.\d+"),
        "portal_version": str,
        "api_version": str,
        "deployment_environment": str,
    }
)
START_ESTIMATE = Obj(
    {
        "estimated_start": Null(TIME),
        "earliest_start": Null(TIME),
        "latest_start": Null(TIME),
        "made_at": TIME,
        "note": Null(str),
        "advice": ListOf(
            Obj(
                {
                    "kind": OneOf(("gpus", "cluster", "gpu_model", "max_duration")),
                    "change": str,
                    "start": TIME,
                    "value": (int, str),
                }
            )
        ),
        "accuracy": Null(Obj({"jobs": int, "median_error_s": int, "p90_error_s": int})),
    }
)
EXPLANATION = Obj(
    {
        "uuid": UUID,
        "status": STATUS,
        "status_updated": TIME,
        "queued_explanations": STR_LIST,
        "end_reason": Null(str),
        "borrowed": bool,
        # The portal's own key (not a GPULab shape): QUEUED jobs only.
        "start_estimate": Null(START_ESTIMATE),
    }
)
CANONICAL_JOB = Obj(
    {
        "name": str,
        "description": Null(str),
        "request": Obj(
            {
                "resources": RESOURCES_REQUEST,
                "docker": DOCKER,
                "scheduling": SCHEDULING_REQUEST,
                "extra": EXTRA,
            }
        ),
    }
)
RESERVATION = Obj(
    {
        "uuid": UUID,
        "name": str,
        "description": str,
        "cluster_id": int,
        "slaves": STR_LIST,
        "gpu_count": Null(int),
        "start": TIME,
        "end": TIME,
        "active": bool,
        "entitled": bool,
        "projects": Null(STR_LIST),
        "users": Null(STR_LIST),
    }
)
TOKEN = Obj(
    {
        "token": Null(str),
        "prefix": Null(str),
        "created": Null(TIME),
        "last_used": Null(TIME),
        "username": str,
    }
)
PROJECT = Obj(
    {
        "name": str,
        "urn": str,
        "description": str,
        "gid": int,
        "my_role": Null(str),
        "members": ListOf(Obj({"username": str, "urn": str, "role": str})),
    }
)
ME = Obj(
    {
        "username": str,
        "urn": str,
        "email": str,
        "is_admin": bool,
        "memberships": ListOf(Obj({"project": str, "project_urn": str, "role": str})),
    }
)
