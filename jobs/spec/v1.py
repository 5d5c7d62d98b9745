"""Conversion of GPULab version 1 job documents (``{"jobDefinition": {...}}``) to version 2.

The mapping is docs/gpulab-format.md, section 2. ``convert_v1`` only restructures (and converts
units); the result goes through the v2 validator like any other job, and ``v1_error_path``
translates the paths of that validator's errors back into the v1 document the user wrote
(``request.resources.cpus`` -> ``jobDefinition.resources.cpuCores``).

Top level of a v1 document:
- ``jobDefinition`` (required);
- ``ssh_pubkeys``, ``emails_queue``, ``emails_run``, ``emails_end`` -> ``request.extra``;
- ``name`` and ``description`` are also accepted beside ``jobDefinition`` (some v1 tooling put
  them there); the values inside ``jobDefinition`` win when both are given;
- server-set keys (uuid, owner, state, restartInfo, deploymentEnvironment) are ignored, as for v2;
- anything else is an error naming the key.
Inside ``jobDefinition`` (and its ``resources`` and ``jobDataLocations`` items) only the keys of
the mapping are allowed, spelled exactly; any other key is an error naming it. Scheduling is
not part of v1: the converted job gets all scheduling defaults. A jobDataLocations item with only
mountPoint or only sharePath converts to a storage item with only containerPath or hostPath: the
v2 validator then copies one into the other, which is the reference's rule.
"""

from __future__ import annotations

import math
import re

from core.errors import FieldError

from .checks import Errors, SpecError, coerce_int, describe, index, join, unknown_key_message
from .v2 import SERVER_SET_FIELDS

V1_NAME_DEFAULT = "unnamed"
V1_EXTRA_KEYS = {
    "ssh_pubkeys": "sshPubKeys",
    "emails_queue": "emailOnQueue",
    "emails_run": "emailOnRun",
    "emails_end": "emailOnEnd",
}
V1_TOP_KEYS = ("jobDefinition", "name", "description", *V1_EXTRA_KEYS)
_IGNORED_TOP_KEYS = (*SERVER_SET_FIELDS, "restart_info", "deployment_environment")
# jobDefinition key -> request.docker key (same meaning, maybe another name)
V1_DOCKER_KEYS = {
    "dockerImage": "image",
    "portMappings": "portMappings",
    "environment": "environment",
    "projectGidVariableName": "projectGidVariableName",
    "workingDir": "workingDir",
    "dockerGroupAdd": "groupAdd",
    "dockerUser": "user",
}
V1_DROPPED_KEYS = ("jobType", "userUidVariableName")  # BATCH/...; deprecated
V1_JOB_KEYS = (
    "name",
    "description",
    "clusterId",
    "command",
    "resources",
    "jobDataLocations",
    *V1_DOCKER_KEYS,
    *V1_DROPPED_KEYS,
)
V1_RESOURCE_KEYS = {
    "cpuCores": "cpus",
    "gpus": "gpus",
    "gpuModel": "gpuModel",
    "minCudaVersion": "minCudaVersion",
}
V1_MEMORY_KEY = "systemMemory"  # MB in v1, GB (GiB) in v2
V1_LOCATION_KEYS = ("mountPoint", "sharePath")


def convert_v1(doc: dict) -> dict:
    """Return the v2 job document for a v1 document (not yet validated as v2).

    Raises SpecError naming every v1-level problem (unknown keys, unusable clusterId or
    systemMemory, empty jobDataLocations items).
    """
    errs = Errors()
    if not isinstance(doc, dict):
        raise SpecError.single("(document)", f"must be a JSON object, not {describe(doc)}")
    _check_keys(doc, "", V1_TOP_KEYS, errs, ignored=_IGNORED_TOP_KEYS)
    job = doc.get("jobDefinition")
    if not isinstance(job, dict):
        errs.add(
            "jobDefinition",
            "is required" if job is None else f"must be an object, not {describe(job)}",
        )
        errs.raise_if_any()
    assert isinstance(job, dict)  # raised above otherwise
    path = "jobDefinition"
    _check_keys(job, path, V1_JOB_KEYS, errs)

    out: dict = {"name": _first_given(job.get("name"), doc.get("name"), V1_NAME_DEFAULT)}
    description = _first_given(job.get("description"), doc.get("description"), None)
    if description is not None:
        out["description"] = description

    resources = _resources(job.get("resources"), join(path, "resources"), errs)
    cluster_id = _cluster_id(job.get("clusterId"), join(path, "clusterId"), errs)
    if cluster_id is not None:
        resources["clusterId"] = cluster_id

    docker: dict = {}
    for v1_key, v2_key in V1_DOCKER_KEYS.items():
        if job.get(v1_key) is not None:
            docker[v2_key] = job[v1_key]
    command = job.get("command")
    if command is not None:
        docker["command"] = [] if command == "" else command
    storage = _storage(job.get("jobDataLocations"), join(path, "jobDataLocations"), errs)
    if storage is not None:
        docker["storage"] = storage

    extra = {v2: doc[v1] for v1, v2 in V1_EXTRA_KEYS.items() if doc.get(v1) is not None}
    errs.raise_if_any()
    out["request"] = {"resources": resources, "docker": docker, "extra": extra}
    return out


def _first_given(*values):
    return next((value for value in values if value is not None), None)


def _check_keys(obj: dict, path: str, allowed, errs: Errors, *, ignored=()) -> None:
    for key in obj:
        if key not in allowed and key not in ignored:
            errs.add(join(path, key), unknown_key_message(key, allowed))


def _resources(value: object, path: str, errs: Errors) -> dict:
    if value is None:
        return {}  # the v2 validator reports the missing required values
    if not isinstance(value, dict):
        errs.add(path, f"must be an object, not {describe(value)}")
        return {}
    _check_keys(value, path, (*V1_RESOURCE_KEYS, V1_MEMORY_KEY), errs)
    result = {v2: value[v1] for v1, v2 in V1_RESOURCE_KEYS.items() if value.get(v1) is not None}
    memory = value.get(V1_MEMORY_KEY)
    if memory is not None:
        megabytes = _number(memory)
        if megabytes is None:
            errs.add(join(path, V1_MEMORY_KEY), f"must be a number of MB, not {describe(memory)}")
        elif isinstance(megabytes, int):
            result["cpuMemoryGb"] = -(-megabytes // 1024)  # exact integer ceil(MB / 1024)
        else:
            result["cpuMemoryGb"] = math.ceil(megabytes / 1024)
    return result


def _number(value: object) -> int | float | None:
    if isinstance(value, float) and math.isfinite(value):
        return value
    return coerce_int(value)


def _cluster_id(value: object, path: str, errs: Errors) -> int | None:
    """v1 allowed an int, a numeric string, or a list of them (only the first one counts): the
    one number of a job document that may be written as text (docs/gpulab-format.md)."""
    if isinstance(value, list):
        if not value:
            return None
        value, path = value[0], index(path, 0)
    if value is None:
        return None
    number = coerce_int(value, text_ok=True)
    if number is None:
        errs.add(path, f"must be a cluster id (an integer), not {describe(value)}")
    return number


def _storage(value: object, path: str, errs: Errors) -> list | None:
    if value is None:
        return None
    if not isinstance(value, list):
        errs.add(path, f"must be a list, not {describe(value)}")
        return None
    result = []
    for position, item in enumerate(value):
        item_path = index(path, position)
        if not isinstance(item, dict):
            errs.add(
                item_path,
                f'must be an object like {{"mountPoint": "/project"}}, not {describe(item)}',
            )
            continue
        _check_keys(item, item_path, V1_LOCATION_KEYS, errs)
        mount, share = item.get("mountPoint"), item.get("sharePath")
        if mount is None and share is None:
            errs.add(item_path, "needs mountPoint or sharePath")
            continue
        # "Each defaults to the other" is left to the v2 validator, which applies that very rule
        # (plus its .ssh special case): copying here would report one mistake twice, once under
        # a key the user never wrote.
        location = {}
        if mount is not None:
            location["containerPath"] = mount
        if share is not None:
            location["hostPath"] = share
        result.append(location)
    return result


# v2 path (as produced by normalize_job on a converted document) -> v1 path; first match wins.
_END = r"(?=$|[.\[])"
_V1_PATH_RULES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern), replacement)
    for pattern, replacement in (
        (rf"^name{_END}", "jobDefinition.name"),
        (rf"^description{_END}", "jobDefinition.description"),
        (rf"^request\.resources\.cpus{_END}", "jobDefinition.resources.cpuCores"),
        (rf"^request\.resources\.cpuMemoryGb{_END}", "jobDefinition.resources.systemMemory"),
        (rf"^request\.resources\.clusterId{_END}", "jobDefinition.clusterId"),
        (rf"^request\.resources{_END}", "jobDefinition.resources"),
        (rf"^request\.docker\.image{_END}", "jobDefinition.dockerImage"),
        (rf"^request\.docker\.groupAdd{_END}", "jobDefinition.dockerGroupAdd"),
        (rf"^request\.docker\.user{_END}", "jobDefinition.dockerUser"),
        (
            r"^request\.docker\.storage(\[\d+\])\.containerPath",
            r"jobDefinition.jobDataLocations\1.mountPoint",
        ),
        (
            r"^request\.docker\.storage(\[\d+\])\.hostPath",
            r"jobDefinition.jobDataLocations\1.sharePath",
        ),
        (rf"^request\.docker\.storage{_END}", "jobDefinition.jobDataLocations"),
        (r"^request\.docker\.", "jobDefinition."),
        (r"^request\.docker$", "jobDefinition"),
        (rf"^request\.extra\.sshPubKeys{_END}", "ssh_pubkeys"),
        (rf"^request\.extra\.emailOnQueue{_END}", "emails_queue"),
        (rf"^request\.extra\.emailOnRun{_END}", "emails_run"),
        (rf"^request\.extra\.emailOnEnd{_END}", "emails_end"),
    )
)


def v1_error_path(path: str) -> str:
    """Translate a v2 error path of a converted document into the v1 document's terms."""
    for pattern, replacement in _V1_PATH_RULES:
        translated, count = pattern.subn(replacement, path, count=1)
        if count:
            return translated
    return path


def v1_errors(error: SpecError) -> SpecError:
    """The same errors with their paths translated by v1_error_path."""
    return SpecError(FieldError(v1_error_path(e.path), e.message) for e in error.errors)
