"""OpenPAI job configs: validation, normalisation and expansion into tasks (docs/openpai.md).

``normalize_openpai`` checks every field of OpenPAI's job specification (the field table in
docs/openpai.md), collects every problem with its path (``taskRoles[1].taskNumber: must be >=
1``) and returns one canonical config: every key present, defaults filled in (``shmMB`` 64,
``retryCount`` 0, ``outputDir`` ``$PAI_DEFAULT_FS_URI/Output/<jobName>``, absent optional values
as null, ``{}`` or ``[]``). Normalising a canonical config returns an equal config.

``expand_tasks`` turns a canonical config into its tasks as data: one GPULab-v2-shaped request
per task role x index, with role/index metadata: a one-role, one-task config is submitted as
an ordinary job, any other as a gang (gangs/openpai_submit.py).

No Django: the rules are those of jobs/spec (standard library only), which this module builds on.

Choices where OpenPAI is silent (each documented in docs/openpai.md):
- keys exactly as OpenPAI spells them (no snake_case second spelling, unlike GPULab's);
- numbers must be JSON numbers (2 and 2.0 are 2; "2" is refused), integers capped at 2^31-1;
- the site's bounds (``RequestLimits`` in jobs/spec/checks.py) apply before anything is
  expanded: tasks of the job (every role's ``taskNumber`` together), ports of a task (a role's
  ``portNumber``s together) and of the job (every task's), the characters of a role's
  ``command``;
- ``minFailedTaskCount``/``minSucceededTaskCount`` are null (the seed's meaning: never fail /
  succeed when all tasks completed) or 1..taskNumber: a larger count could never be reached;
  omitted, they take OpenPAI's REST server's defaults (``OMITTED_COUNTS``: 1 and null);
- ``portNumber`` >= 1; a fixed range (``beginAt`` > 0) must end at or below 65535 and must not
  overlap another range of the same task role; labels are unique within a task role;
- ``jobEnvs`` names are variable names; PAI_*, GPULAB_*, NVIDIA_* and the GPU variables are
  set by the portal; values are strings, integers or booleans (``isDebug`` and ``paiAzRDMA``
  booleans only); ``paiAzRDMA: true`` is refused: no slave of the portal offers Azure RDMA;
- storage fields (``dataDir``, ``outputDir``, ``codeDir``, ``authFile``) name paths in the
  project's storage: ``$PAI_DEFAULT_FS_URI/a/b``, ``${PAI_DEFAULT_FS_URI}/a/b``,
  ``hdfs://host[:port]/a/b`` (the host is ignored: a project has one store) or ``/a/b``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection
from typing import Any

from core.errors import DOCUMENT_PATH
from core.jsontext import check_storable
from jobs.spec import SpecError
from jobs.spec.checks import (
    DEFAULT_LIMITS,
    SITE_LIMIT,
    Errors,
    RequestLimits,
    describe,
    index,
    join,
    read_int,
    read_object,
    read_str,
    unknown_key_message,
)
from jobs.spec.v2_docker import ENV_NAME_HINT, ENV_NAME_RE, image_check, reserved_env_reason

OPENPAI = "openpai"

JOB_FIELDS = (
    "jobName",
    "image",
    "authFile",
    "dataDir",
    "outputDir",
    "codeDir",
    "virtualCluster",
    "taskRoles",
    "gpuType",
    "retryCount",
    "jobEnvs",
    "extras",
)
ROLE_FIELDS = (
    "name",
    "taskNumber",
    "cpuNumber",
    "memoryMB",
    "shmMB",
    "gpuNumber",
    "portList",
    "command",
    "minFailedTaskCount",
    "minSucceededTaskCount",
)
PORT_FIELDS = ("label", "beginAt", "portNumber")
STORAGE_FIELDS = ("authFile", "dataDir", "outputDir", "codeDir")

JOB_NAME_RE = re.compile(r"[A-Za-z0-9\-._~]+")
ROLE_NAME_RE = re.compile(r"[A-Za-z0-9._~]+")
JOB_NAME_MAX_LENGTH = 200  # the length of the job's name column
ROLE_NAME_MAX_LENGTH = 64
DEFAULT_SHM_MB = 64
MIN_MEMORY_MB = 100
MAX_PORT = 65535
MAX_PATH_LENGTH = 4096
GPU_TYPE_MAX_LENGTH = 200

FS_VARIABLE = "PAI_DEFAULT_FS_URI"
# Where the project's storage (the slave's "/project" root) appears in a task's container; the
# value of $PAI_DEFAULT_FS_URI inside it.
PROJECT_STORAGE_ROOT = "/project"
# Container ports handed to "beginAt": 0 port types, counted up per task role (each task has its
# own network namespace, so these never collide between tasks; Docker picks the host ports).
AUTO_PORT_BASE = 20000
# OpenPAI runs the command through a shell; /bin/sh is in every image, bash is not.
SHELL = ("/bin/sh", "-c")

_FS_PREFIX_RE = re.compile(r"^(?:\$PAI_DEFAULT_FS_URI|\$\{PAI_DEFAULT_FS_URI\}|hdfs://[^/\s]*)")
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")
_ENV_UNSAFE_RE = re.compile(r"[^A-Za-z0-9_]")
BOOLEAN_ENVS = ("isDebug", "paiAzRDMA")
# What OpenPAI's REST server fills in for a completion count a task role omits (its v1 job
# schema: ``minFailedTaskCount`` default 1, ``minSucceededTaskCount`` default null; its v2
# protocol: 1 and the role's instances, the same outcome once one failure fails the job).
OMITTED_COUNTS: dict[str, int | None] = {"minFailedTaskCount": 1, "minSucceededTaskCount": None}
PAI_PREFIX = "PAI_"


# --- normalisation ----------------------------------------------------------------------------


def _read_exact(value: object, path: str, errs: Errors, *, fields: tuple[str, ...]):
    """read_object, but keys exactly as OpenPAI spells them: GPULab's snake_case second
    spelling (job_name) is an unknown key here."""
    if isinstance(value, dict):
        for key in value:
            if key not in fields:
                errs.add(join(path, key), unknown_key_message(key, fields))
        value = {key: item for key, item in value.items() if key in fields}
    return read_object(value, path, errs, fields=fields)


def normalize_openpai(
    doc: object,
    *,
    allowed_registries: Collection[str] = (),
    limits: RequestLimits = DEFAULT_LIMITS,
) -> dict:
    """Validate an OpenPAI job config and return its canonical form; raise SpecError listing
    every problem, each with its path. ``allowed_registries``: the site's private registries
    (as for GPULab images); ``limits``: the site's bounds on tasks, ports and commands."""
    if not isinstance(doc, dict):
        raise SpecError.single(DOCUMENT_PATH, f"must be a JSON object, not {describe(doc)}")
    check_storable(doc)
    errs = Errors()
    top = _read_exact(doc, "", errs, fields=JOB_FIELDS)
    assert top is not None

    job_name = read_str(
        top,
        "jobName",
        errs,
        required=True,
        max_length=JOB_NAME_MAX_LENGTH,
        pattern=JOB_NAME_RE,
        pattern_message=r"must match ^[A-Za-z0-9\-._~]+$",
    )
    image = read_str(top, "image", errs, required=True, min_length=1)
    if image is not None:
        image = image_check(image, top.path_of("image"), errs, allowed_registries)
    storage = {name: _storage_field(top, name, errs) for name in STORAGE_FIELDS}
    if storage["outputDir"] is None and job_name is not None:
        storage["outputDir"] = f"${FS_VARIABLE}/Output/{job_name}"
    virtual_cluster = read_str(top, "virtualCluster", errs, min_length=1, max_length=255)
    gpu_type = read_str(top, "gpuType", errs, min_length=2, max_length=GPU_TYPE_MAX_LENGTH)
    retry_count = read_int(top, "retryCount", errs, minimum=0)
    roles = _task_roles(top, errs, limits)
    job_envs = _job_envs(top.get("jobEnvs"), top.path_of("jobEnvs"), errs)
    extras = top.get("extras")
    if extras is None:
        extras = {}
    elif not isinstance(extras, dict):
        errs.add(top.path_of("extras"), f"must be an object, not {describe(extras)}")
    errs.raise_if_any()
    return {
        "jobName": job_name,
        "image": image,
        **storage,
        "virtualCluster": virtual_cluster,
        "taskRoles": roles,
        "gpuType": gpu_type,
        "retryCount": 0 if retry_count is None else retry_count,
        "jobEnvs": job_envs,
        "extras": extras,
    }


def storage_path(value: str) -> str:
    """The path inside the project's storage that a (valid) storage field names: ``/a/b``."""
    rest = _FS_PREFIX_RE.sub("", value, count=1)
    parts = [part for part in rest.split("/") if part]
    return "/" + "/".join(parts)


def _storage_field(top, name: str, errs: Errors) -> str | None:
    value = read_str(top, name, errs, min_length=1, max_length=MAX_PATH_LENGTH)
    if value is None:
        return None
    path = top.path_of(name)
    rest = _FS_PREFIX_RE.sub("", value, count=1)
    if rest and not rest.startswith("/"):
        errs.add(
            path,
            f"must be a path in the project's storage: ${FS_VARIABLE}/..., hdfs://host/... or /...",
        )
        return None
    if _CONTROL_RE.search(value):
        errs.add(path, "must not contain control characters")
        return None
    if any(part in (".", "..") for part in rest.split("/")):
        errs.add(path, 'must not contain "." or ".." segments')
        return None
    if name == "authFile" and storage_path(value) == "/":
        errs.add(path, "must name a file, not the storage root")
        return None
    return value


def _task_roles(top, errs: Errors, limits: RequestLimits) -> list[dict]:
    value = top.get("taskRoles")
    path = top.path_of("taskRoles")
    if value is None:
        errs.add(path, "is required")
        return []
    if not isinstance(value, list):
        errs.add(path, f"must be a list, not {describe(value)}")
        return []
    if not value:
        errs.add(path, "must contain at least one task role")
        return []
    roles = []
    seen: dict[str, int] = {}
    for position, item in enumerate(value):
        role = _task_role(item, index(path, position), errs, limits)
        if role is None:
            continue
        name = role["name"]
        if name is not None:
            if name in seen:
                errs.add(
                    join(index(path, position), "name"),
                    f'must be unique ("{name}" is also {index(path, seen[name])}.name)',
                )
            else:
                seen[name] = position
        roles.append(role)
    _check_job_totals(roles, path, errs, limits)
    return roles


def _check_job_totals(roles: list[dict], path: str, errs: Errors, limits: RequestLimits) -> None:
    """Tasks and ports of the whole job within the site's bounds (each role's own were checked
    with the role)."""
    numbers = [role["taskNumber"] for role in roles]
    if None in numbers or any(n > limits.gang_tasks for n in numbers):
        return  # named at the role already
    tasks = sum(numbers)
    if tasks > limits.gang_tasks:
        errs.add(
            path,
            f"must have at most {limits.gang_tasks} tasks in all ({SITE_LIMIT}), not {tasks}",
        )
        return
    ports = sum(role["taskNumber"] * _ports_per_task(role) for role in roles)
    if ports > limits.ports_per_gang:
        errs.add(
            path,
            f"must open at most {limits.ports_per_gang} ports in all tasks together "
            f"({SITE_LIMIT}), not {ports}",
        )


def _ports_per_task(role: dict) -> int:
    return sum(item["portNumber"] or 0 for item in role["portList"])


def _task_role(item: object, path: str, errs: Errors, limits: RequestLimits) -> dict | None:
    f = _read_exact(item, path, errs, fields=ROLE_FIELDS)
    if f is None:
        return None
    name = read_str(
        f,
        "name",
        errs,
        required=True,
        max_length=ROLE_NAME_MAX_LENGTH,
        pattern=ROLE_NAME_RE,
        pattern_message="must match ^[A-Za-z0-9._~]+$",
    )
    task_number = read_int(f, "taskNumber", errs, required=True, minimum=1)
    if task_number is not None and task_number > limits.gang_tasks:
        errs.add(
            f.path_of("taskNumber"),
            f"must be <= {limits.gang_tasks} (the most tasks of one job: {SITE_LIMIT})",
        )
    cpu_number = read_int(f, "cpuNumber", errs, required=True, minimum=1)
    memory_mb = read_int(f, "memoryMB", errs, required=True, minimum=MIN_MEMORY_MB)
    shm_mb = read_int(f, "shmMB", errs, minimum=1)
    if shm_mb is None and not f.has("shmMB"):
        shm_mb = DEFAULT_SHM_MB
    if shm_mb is not None and memory_mb is not None and shm_mb > memory_mb:
        errs.add(f.path_of("shmMB"), f"must be <= memoryMB ({memory_mb})")
    gpu_number = read_int(f, "gpuNumber", errs, required=True, minimum=0)
    command = f.get("command")
    if command is None:
        errs.add(f.path_of("command"), "is required")
    elif not isinstance(command, str):
        errs.add(f.path_of("command"), f"must be a string, not {describe(command)}")
        command = None
    elif not command.strip():
        errs.add(f.path_of("command"), "must not be empty")
        command = None
    elif len(command) > limits.command_chars:
        errs.add(
            f.path_of("command"),
            f"must be at most {limits.command_chars} characters ({SITE_LIMIT}), not {len(command)}",
        )
        command = None
    counts = {}
    for key in ("minFailedTaskCount", "minSucceededTaskCount"):
        # Omitted: OpenPAI's REST server's default (OMITTED_COUNTS: minFailedTaskCount 1, so
        # one failed task fails the job and retryCount retries it). Written null: the seed's
        # meaning (never fail / succeed once every task completed), which the REST server
        # keeps too.
        count = counts[key] = read_int(f, key, errs, minimum=1)
        if key not in f.entries:  # omitted; a written null stays null
            count = counts[key] = OMITTED_COUNTS[key]
        if count is not None and task_number is not None and count > task_number:
            errs.add(f.path_of(key), f"must be <= taskNumber ({task_number})")
    return {
        "name": name,
        "taskNumber": task_number,
        "cpuNumber": cpu_number,
        "memoryMB": memory_mb,
        "shmMB": shm_mb,
        "gpuNumber": gpu_number,
        "portList": _port_list(f.get("portList"), f.path_of("portList"), errs, limits),
        "command": command,
        **counts,
    }


def _port_list(value: object, path: str, errs: Errors, limits: RequestLimits) -> list[dict]:
    if value is None:
        return []
    if not isinstance(value, list):
        errs.add(path, f"must be a list, not {describe(value)}")
        return []
    if len(value) > limits.ports_per_job:  # every item opens a port at least: count first
        errs.add(path, _too_many_ports(len(value), limits.ports_per_job, at_least=True))
        return []
    ports: list[dict[str, Any]] = []
    labels: dict[str, int] = {}
    fixed: list[tuple[int, int, int]] = []  # (first, last, position) of beginAt > 0 ranges
    for position, item in enumerate(value):
        item_path = index(path, position)
        f = _read_exact(item, item_path, errs, fields=PORT_FIELDS)
        if f is None:
            continue
        label = read_str(
            f,
            "label",
            errs,
            required=True,
            max_length=ROLE_NAME_MAX_LENGTH,
            pattern=ROLE_NAME_RE,
            pattern_message="must match ^[A-Za-z0-9._~]+$",
        )
        if label is not None:
            if label in labels:
                errs.add(
                    f.path_of("label"),
                    f'must be unique in the task role ("{label}" is also '
                    f"{index(path, labels[label])}.label)",
                )
            else:
                labels[label] = position
        begin_at = read_int(f, "beginAt", errs, required=True, minimum=0, maximum=MAX_PORT)
        number = read_int(f, "portNumber", errs, required=True, minimum=1, maximum=MAX_PORT)
        if begin_at and number is not None:
            last = begin_at + number - 1
            if last > MAX_PORT:
                errs.add(f.path_of("portNumber"), f"ports {begin_at}..{last} go past {MAX_PORT}")
            else:
                for first, end, other in fixed:
                    if begin_at <= end and first <= last:
                        errs.add(
                            f.path_of("beginAt"),
                            f"ports {begin_at}..{last} overlap {index(path, other)}",
                        )
                        break
                fixed.append((begin_at, last, position))
        ports.append({"label": label, "beginAt": begin_at, "portNumber": number})
    total = sum(item["portNumber"] or 0 for item in ports)
    if total > limits.ports_per_job:
        errs.add(path, _too_many_ports(total, limits.ports_per_job))
        return []
    return ports


def _too_many_ports(count: int, limit: int, *, at_least: bool = False) -> str:
    many = f"at least {count}" if at_least else str(count)
    return f"must open at most {limit} ports per task ({SITE_LIMIT}), not {many}"


def _job_envs(value: object, path: str, errs: Errors) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        errs.add(path, f"must be an object of name: value pairs, not {describe(value)}")
        return {}
    result = {}
    for name, item in value.items():
        item_path = join(path, name)
        if not ENV_NAME_RE.fullmatch(name):
            errs.add(item_path, ENV_NAME_HINT)
        elif name.upper().startswith(PAI_PREFIX):
            errs.add(item_path, "PAI_* variables are set by the portal; a job cannot set them")
        elif reason := reserved_env_reason(name):
            errs.add(item_path, reason)
        elif name in BOOLEAN_ENVS and not isinstance(item, bool):
            errs.add(item_path, f"must be true or false, not {describe(item)}")
        elif name == "paiAzRDMA" and item:
            errs.add(item_path, "Azure RDMA is not offered by any slave of this portal")
        elif item is None or isinstance(item, float | list | dict):
            errs.add(item_path, f"must be a string, integer or boolean, not {describe(item)}")
        else:
            result[name] = item
    return result


# --- expansion into tasks ---------------------------------------------------------------------


def env_part(name: str) -> str:
    """A role name or port label as part of a variable name: characters a variable name cannot
    hold ("." and "~") become "_" (PAI_TASK_ROLE_TASK_COUNT_ps.server -> ..._ps_server)."""
    return _ENV_UNSAFE_RE.sub("_", name)


def role_ports(role: dict) -> list[dict]:
    """The container ports of each port type of a task role (the same in every task).

    ``beginAt`` > 0: ports beginAt..beginAt+portNumber-1, published on the same host ports
    (OpenPAI's ports are the host's). ``beginAt`` 0: container ports from AUTO_PORT_BASE up,
    skipping the role's fixed ports, published on host ports Docker picks.
    """
    taken = {
        port
        for item in role["portList"]
        if item["beginAt"]
        for port in range(item["beginAt"], item["beginAt"] + item["portNumber"])
    }
    next_port = AUTO_PORT_BASE
    result = []
    for item in role["portList"]:
        if item["beginAt"]:
            ports = list(range(item["beginAt"], item["beginAt"] + item["portNumber"]))
            result.append({"label": item["label"], "containerPorts": ports, "hostPorts": ports})
            continue
        ports = []
        while len(ports) < item["portNumber"]:
            if next_port not in taken:
                ports.append(next_port)
            next_port += 1
        result.append(
            {"label": item["label"], "containerPorts": ports, "hostPorts": [None] * len(ports)}
        )
    return result


def job_environment(config: dict, *, user_name: str) -> dict[str, str]:
    """PAI_* variables that are the same in every task and known before any task starts."""
    roles = config["taskRoles"]
    env = {
        "PAI_JOB_NAME": config["jobName"],
        "PAI_USER_NAME": user_name,
        "PAI_DEFAULT_FS_URI": PROJECT_STORAGE_ROOT,
        "PAI_TASK_ROLE_COUNT": str(len(roles)),
        "PAI_TASK_ROLE_LIST": ",".join(role["name"] for role in roles),
    }
    for key, field in (
        ("PAI_DATA_DIR", "dataDir"),
        ("PAI_OUTPUT_DIR", "outputDir"),
        ("PAI_CODE_DIR", "codeDir"),
    ):
        if config[field] is not None:
            env[key] = PROJECT_STORAGE_ROOT + storage_path(config[field]).rstrip("/")
    for role in roles:
        part = env_part(role["name"])
        env[f"PAI_TASK_ROLE_TASK_COUNT_{part}"] = str(role["taskNumber"])
        env[f"PAI_RESOURCE_{part}"] = (
            f"{role['gpuNumber']},{role['cpuNumber']},{role['memoryMB']},{role['shmMB']}"
        )
        for key, field in (
            ("PAI_MIN_FAILED_TASK_COUNT", "minFailedTaskCount"),
            ("PAI_MIN_SUCCEEDED_TASK_COUNT", "minSucceededTaskCount"),
        ):
            # null (not set) is an empty value: "${X:-default}" in a shell still works.
            env[f"{key}_{part}"] = "" if role[field] is None else str(role[field])
    return env


def _mount(value: str) -> dict:
    folder = PROJECT_STORAGE_ROOT + storage_path(value)
    folder = folder if folder.endswith("/") else folder + "/"
    return {"hostPath": folder, "containerPath": folder}


def expand_tasks(config: dict, *, user_name: str, cluster_id: int | None = None) -> list[dict]:
    """Every task of a canonical config, in role order then index order.

    Each task: ``role``, ``index``, ``name`` (``<jobName>.<role>.<index>``), ``request`` (a
    GPULab v2 request: resources, docker with the shell-wrapped command, the job's and the
    PAI_* environment, data/output mounts and port mappings), ``ports`` (label -> container and
    host ports), ``readOnlyMounts`` (codeDir), ``shmMB``, and the job-level policies the
    runtime applies (``retryCount``, ``minFailedTaskCount``, ``minSucceededTaskCount``,
    ``debug``, ``authFile``). Variables known only once tasks are placed (PAI_HOST_IP_*, the
    peers' PAI_PORT_LIST_*, PAI_TASK_ROLE_*_HOST_LIST) are left to the runtime.
    """
    shared_env = job_environment(config, user_name=user_name)
    storage = []
    for field in ("dataDir", "outputDir"):
        if config[field] is not None:
            mount = _mount(config[field])
            if mount not in storage:
                storage.append(mount)
    read_only = [_mount(config["codeDir"])] if config["codeDir"] is not None else []
    for mount in read_only:
        # Mounted like the others (resolved and prepared on the slave), read-only at launch
        # (read_only_paths, through gangs.hooks.container_extras).
        if mount not in storage:
            storage.append(mount)
    tasks = []
    for role in config["taskRoles"]:
        ports = role_ports(role)
        port_mappings = [
            {"containerPort": container, "hostPort": host, "hostIp": None}
            for item in ports
            for container, host in zip(item["containerPorts"], item["hostPorts"], strict=True)
        ]
        # shmMB is the container's shm size, set at launch from the stored config
        # (shm_bytes, through gangs.hooks.container_extras): counted within memoryMB, as under
        # OpenPAI.
        extra_storage: list[dict] = []
        for task_index in range(role["taskNumber"]):
            part = env_part(role["name"])
            env = {**config["jobEnvs"], **shared_env}
            env["PAI_CURRENT_TASK_ROLE_NAME"] = role["name"]
            env["PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX"] = str(task_index)
            for item in ports:
                name = f"PAI_PORT_LIST_{part}_{task_index}_{env_part(item['label'])}"
                env[name] = ",".join(str(p) for p in item["containerPorts"])
            request = {
                "resources": {
                    "cpus": role["cpuNumber"],
                    "gpus": role["gpuNumber"],
                    # memoryMB in whole GiB, rounded up: the portal reserves memory in GB.
                    "cpuMemoryGb": math.ceil(role["memoryMB"] / 1024),
                    "gpuModel": [config["gpuType"]] if config["gpuType"] else [],
                    "clusterId": cluster_id,
                },
                "docker": {
                    "image": config["image"],
                    "command": [*SHELL, role["command"]],
                    "environment": env,
                    "storage": [*storage, *extra_storage],
                    "portMappings": port_mappings,
                },
            }
            tasks.append(
                {
                    "role": role["name"],
                    "index": task_index,
                    "name": f"{config['jobName']}.{role['name']}.{task_index}",
                    "request": request,
                    "ports": ports,
                    "readOnlyMounts": read_only,
                    "shmMB": role["shmMB"],
                    "retryCount": config["retryCount"],
                    "minFailedTaskCount": role["minFailedTaskCount"],
                    "minSucceededTaskCount": role["minSucceededTaskCount"],
                    "debug": bool(config["jobEnvs"].get("isDebug", False)),
                    "authFile": config["authFile"],
                }
            )
    return tasks


def shm_bytes(config: dict, role_name: str) -> int:
    """The shm size of a task of this role (the first role when the name is unknown)."""
    roles = config["taskRoles"]
    role = next((r for r in roles if r["name"] == role_name), roles[0])
    return int(role["shmMB"]) * 1024 * 1024


def read_only_paths(config: dict) -> set[str]:
    """Container paths (no trailing slash) mounted read-only: codeDir's folder."""
    if config.get("codeDir") is None:
        return set()
    return {_mount(config["codeDir"])["containerPath"].rstrip("/")}


def task_count(config: dict) -> int:
    return sum(role["taskNumber"] for role in config["taskRoles"])


def role_summaries(config: dict) -> list[dict]:
    """One line of facts per task role, for the Create Job page and convert answers."""
    return [
        {
            "name": role["name"],
            "taskNumber": role["taskNumber"],
            "cpuNumber": role["cpuNumber"],
            "memoryMB": role["memoryMB"],
            "shmMB": role["shmMB"],
            "gpuNumber": role["gpuNumber"],
            "ports": ", ".join(f"{p['label']}×{p['portNumber']}" for p in role["portList"]),
            "command": role["command"],
        }
        for role in config["taskRoles"]
    ]


__all__ = [
    "OPENPAI",
    "expand_tasks",
    "job_environment",
    "normalize_openpai",
    "role_ports",
    "role_summaries",
    "storage_path",
    "task_count",
]
