"""OpenPAI's job protocol v2 (the YAML ``POST /api/v2/jobs`` takes) read into the job config the
portal runs (docs/openpai.md, "Protocol v2").

``protocol_load`` parses the YAML with ``yaml.safe_load`` (no tags that build objects), after
the API's body limit, and walks what it built within ``MAX_NODES`` values and ``MAX_DEPTH``
levels (an alias-expansion "billion laughs" document builds few objects but is refused here
before anything copies it). ``protocol_to_config`` checks the protocol's rules as OpenPAI's REST
server does (its JSON schema and ``protocolValidate``: prerequisites that exist, no duplicate,
a default deployment that exists), renders the commands as its ``protocolRender`` does
(``<% $parameters.x %>``, ``<% $script.name %>``, ``<% $data.uri[0] %>``, ``<% $output.uri %>``;
the deployment's preCommands and postCommands around them; ``$secrets`` only in a docker image's
``auth``, never in commands) and returns the job config of OpenPAI's job reference that the
portal validates and submits like any other (gangs/openpai_config.py), with a map from each of
its field paths back to the protocol's, so that errors name what the user wrote.

Completion defaults as OpenPAI's REST server fills them in (src/rest-server models/v2/job):
``minFailedInstances`` omitted, null or 0 is 1 and -1 "never fails" (null here);
``minSucceededInstances`` omitted, null or 0 is the role's instances and -1 "when every task
completed" (null here).

No Django.
"""

from __future__ import annotations

import math
import re
from datetime import date, datetime
from typing import Any

import yaml

from core.errors import FieldError
from jobs.spec import SpecError
from jobs.spec.checks import Errors, describe

YAML_PATH = "(yaml)"
MAX_NODES = 100_000  # values in a protocol after aliases are followed; a real one has hundreds
MAX_DEPTH = 64
PROTOCOL_KEYS = (
    "protocolVersion",
    "name",
    "type",
    "version",
    "contributor",
    "description",
    "prerequisites",
    "parameters",
    "secrets",
    "jobRetryCount",
    "taskRoles",
    "deployments",
    "defaults",
    "extras",
)
ROLE_KEYS = (
    "protocolVersion",
    "instances",
    "completion",
    "taskRetryCount",
    "prerequisites",
    "dockerImage",
    "data",
    "output",
    "script",
    "extraContainerOptions",
    "resourcePerInstance",
    "commands",
)
PREREQUISITE_TYPES = ("script", "output", "data", "dockerimage")
# The fields of a task role that name a prerequisite, and its type.
PREREQUISITE_FIELDS = {
    "dockerImage": "dockerimage",
    "data": "data",
    "output": "output",
    "script": "script",
}
NAME_RE = re.compile(r"[a-zA-Z0-9_-]{1,255}")
ROLE_NAME_RE = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
# The key of ``extras`` that names the portal project to submit in (OpenPAI has none).
PROJECT_EXTRA = "gpuportal.project"
# OpenPAI's name for "no particular virtual cluster": the portal's default, any cluster.
DEFAULT_VIRTUAL_CLUSTER = "default"
_TAG = re.compile(r"<%\s*(.*?)\s*%>", re.DOTALL)


# --- loading ----------------------------------------------------------------------------------


def protocol_load(text: str | bytes) -> dict:
    """The protocol's YAML as plain JSON-able data (a mapping); SpecError on ``(yaml)`` with the
    line and column of a syntax error, or when it is too big once its aliases are followed."""
    try:
        value = yaml.safe_load(text)
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        raise SpecError.single(YAML_PATH, f"{where}{error.problem or error}") from None
    except yaml.YAMLError as error:
        raise SpecError.single(YAML_PATH, f"not YAML: {error}") from None
    except (ValueError, RecursionError) as error:  # "\0" in text, nesting past Python's stack
        raise SpecError.single(YAML_PATH, f"not YAML: {error}") from None
    if not isinstance(value, dict):
        raise SpecError.single(
            YAML_PATH, f"must be a mapping (a job protocol), not {describe(value)}"
        )
    return _plain(value, [0], 0, "")


def _plain(value: Any, count: list[int], depth: int, path: str) -> Any:
    """A copy of ``value`` with JSON's types only: dates as ISO text, keys as text; refused past
    MAX_NODES values (aliases count each time they are used) or MAX_DEPTH levels."""
    count[0] += 1
    if count[0] > MAX_NODES:
        raise SpecError.single(
            YAML_PATH, f"too big: more than {MAX_NODES} values once its aliases are followed"
        )
    if depth > MAX_DEPTH:
        raise SpecError.single(YAML_PATH, f"nested more than {MAX_DEPTH} levels deep")
    if isinstance(value, dict):
        return {
            str(key): _plain(item, count, depth + 1, f"{path}.{key}" if path else str(key))
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_plain(item, count, depth + 1, f"{path}[{i}]") for i, item in enumerate(value)]
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, float) and not math.isfinite(value):
        raise SpecError.single(path or YAML_PATH, "must be a finite number")
    if value is None or isinstance(value, str | int | float | bool):
        return value
    raise SpecError.single(path or YAML_PATH, f"must be plain YAML data, not {describe(value)}")


# --- rendering --------------------------------------------------------------------------------


def _text(value: Any) -> str:
    """A looked-up value as JavaScript's string concatenation writes it (OpenPAI renders with
    mustache in Node): true, 1.5, lists joined by commas."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join("" if v is None else _text(v) for v in value)
    if isinstance(value, dict):
        return "[object Object]"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def render(template: str, context: dict[str, Any]) -> str:
    """OpenPAI's ``render``: each ``<% name %>`` whose dotted name (``[0]`` read as ``.0``) is
    found in ``context`` becomes its value; one not found is kept as ``<% name %>``; the result
    is stripped."""

    def one(match: re.Match) -> str:
        name = re.sub(r"\[(\d+)\]", r".\1", match.group(1))
        value: Any = context
        for part in name.split("."):
            if isinstance(value, dict) and part in value:
                value = value[part]
            elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
                value = value[int(part)]
            else:
                return f"<% {name} %>"
        return "<% " + name + " %>" if value is None else _text(value)

    return _TAG.sub(one, template).strip()


# --- checking and mapping ---------------------------------------------------------------------


def _mapping(value: Any, path: str, errs: Errors, keys: tuple[str, ...] | None = None) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        errs.add(path, f"must be a mapping, not {describe(value)}")
        return {}
    if keys is not None:
        for key in value:
            if key not in keys:
                errs.add(f"{path}.{key}" if path else key, "is not a field of the job protocol")
    return value


def _int(value: Any, path: str, errs: Errors, *, minimum: int | None = None) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        errs.add(path, f"must be an integer, not {describe(value)}")
        return None
    if minimum is not None and value < minimum:
        errs.add(path, f"must be >= {minimum}")
        return None
    return value


def _strings(value: Any, path: str, errs: Errors, *, required: bool = False) -> list[str]:
    if value is None:
        if required:
            errs.add(path, "is required")
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        errs.add(path, "must be a list of strings")
        return []
    if required and not value:
        errs.add(path, "must have at least one item")
    return value


def _prerequisites(value: Any, errs: Errors) -> dict[str, dict[str, dict]]:
    """The prerequisites by type, then name (OpenPAI's ``protocolValidate``)."""
    found: dict[str, dict[str, dict]] = {kind: {} for kind in PREREQUISITE_TYPES}
    if value is None:
        return found
    if not isinstance(value, list) or not value:
        errs.add("prerequisites", "must be a list of at least one prerequisite")
        return found
    for position, item in enumerate(value):
        path = f"prerequisites[{position}]"
        if not isinstance(item, dict):
            errs.add(path, f"must be a mapping, not {describe(item)}")
            continue
        name, kind = item.get("name"), item.get("type")
        if not isinstance(name, str) or not NAME_RE.fullmatch(name):
            errs.add(f"{path}.name", "is required: a name in ^[a-zA-Z0-9_-]+$")
            continue
        if kind not in PREREQUISITE_TYPES:
            errs.add(f"{path}.type", f"must be one of {', '.join(PREREQUISITE_TYPES)}")
            continue
        if kind == "dockerimage":
            _mapping(
                item,
                path,
                errs,
                ("protocolVersion", "name", "type", "version", "contributor", "description")
                + ("auth", "uri"),
            )
            if not isinstance(item.get("uri"), str) or not item["uri"].strip():
                errs.add(f"{path}.uri", "is required: the image")
            auth = _mapping(
                item.get("auth"), f"{path}.auth", errs, ("username", "password", "registryuri")
            )
            for key, text in auth.items():
                if not isinstance(text, str):
                    errs.add(f"{path}.auth.{key}", f"must be a string, not {describe(text)}")
        if name in found[kind]:
            errs.add(path, f"duplicate {kind} prerequisite {name}")
            continue
        found[kind][name] = item
    return found


def _image(item: dict, secrets: dict) -> str:
    """The image reference of a dockerimage prerequisite, its ``auth`` (secrets rendered) as the
    portal's ``user:password@registry/repository`` form."""
    uri = item["uri"].strip()
    auth = item.get("auth") or {}
    context = {"$secrets": secrets}
    user = render(str(auth.get("username") or ""), context)
    password = render(str(auth.get("password") or ""), context)
    if not user:
        return uri
    registry = render(str(auth.get("registryuri") or ""), context).strip().rstrip("/")
    registry = re.sub(r"^[a-z]+://", "", registry)
    if registry and not uri.startswith(registry + "/"):
        uri = f"{registry}/{uri}"
    return f"{user}:{password}@{uri}"


def _count(value: Any, path: str, errs: Errors, *, instances: int, failed: bool) -> int | None:
    """A completion count as OpenPAI's REST server reads it: omitted, null or 0 is the default
    (1 failed task; every instance succeeded), -1 is "not set" (null here)."""
    number = value if value is not None else 0
    if isinstance(number, bool) or not isinstance(number, int):
        errs.add(path, f"must be an integer, not {describe(value)}")
        return None
    if number == -1:
        return None
    if number < -1:
        errs.add(path, "must be -1, or >= 1 (0 and null take the default)")
        return None
    if number == 0:
        return 1 if failed else instances
    return number


def protocol_to_config(protocol: dict) -> tuple[dict, dict[str, str], str | None]:
    """``(config, paths, project)``: the job config of OpenPAI's job reference this protocol
    describes, a map from each config path to the protocol path it comes from (``paths_back``),
    and the project ``extras["gpuportal.project"]`` names (None when it names none). Raises
    SpecError listing every problem of the protocol's own rules."""
    errs = Errors()
    _mapping(protocol, "", errs, PROTOCOL_KEYS)
    if protocol.get("protocolVersion") not in (2, "2"):
        errs.add("protocolVersion", "is required: 2")
    name = protocol.get("name")
    if not isinstance(name, str) or not NAME_RE.fullmatch(name):
        errs.add("name", r"is required: a name in ^[a-zA-Z0-9_-]+$ of at most 255 characters")
    if protocol.get("type") != "job":
        errs.add("type", 'is required: "job"')
    parameters = _mapping(protocol.get("parameters"), "parameters", errs)
    secrets = _mapping(protocol.get("secrets"), "secrets", errs)
    retry = _int(protocol.get("jobRetryCount"), "jobRetryCount", errs, minimum=0)
    prerequisites = _prerequisites(protocol.get("prerequisites"), errs)
    defaults = _mapping(protocol.get("defaults"), "defaults", errs)
    deployments = _deployments(protocol.get("deployments"), errs)
    deployment = defaults.get("deployment")
    if deployment is not None and deployment not in deployments:
        errs.add("defaults.deployment", f"default deployment {deployment} does not exist")
    virtual_cluster = defaults.get("virtualCluster")
    if virtual_cluster is not None and not isinstance(virtual_cluster, str):
        errs.add("defaults.virtualCluster", f"must be a string, not {describe(virtual_cluster)}")
        virtual_cluster = None
    extras = dict(_mapping(protocol.get("extras"), "extras", errs))
    project = extras.pop(PROJECT_EXTRA, None)
    if project is not None and not isinstance(project, str):
        errs.add(f"extras.{PROJECT_EXTRA}", "must be a project name or URN")
        project = None
    paths = {
        "jobName": "name",
        "image": "prerequisites",
        "virtualCluster": "defaults.virtualCluster",
        "retryCount": "jobRetryCount",
        "taskRoles": "taskRoles",
        "extras": "extras",
    }
    roles_in = protocol.get("taskRoles")
    roles: list[dict] = []
    images: dict[str, str] = {}
    if not isinstance(roles_in, dict) or not roles_in:
        errs.add("taskRoles", "is required: a mapping of at least one task role")
        roles_in = {}
    chosen = deployments.get(deployment, {}) if isinstance(deployment, str) else {}
    for position, (role_name, role) in enumerate(roles_in.items()):
        path = f"taskRoles.{role_name}"
        if not ROLE_NAME_RE.fullmatch(role_name):
            errs.add(path, r"task role names must match ^[a-zA-Z_][a-zA-Z0-9_]*$")
        if not isinstance(role, dict):
            errs.add(path, f"must be a mapping, not {describe(role)}")
            continue
        made = _role(role_name, role, path, errs, prerequisites, parameters, chosen)
        if made is None:
            continue
        role_config, image_name = made
        if image_name in prerequisites["dockerimage"]:
            images[role_name] = _image(prerequisites["dockerimage"][image_name], secrets)
        roles.append(role_config)
        paths.update(_role_paths(position, path))
    if len(set(images.values())) > 1:
        errs.add(
            "taskRoles",
            "every task role must use the same docker image here (a job of the portal has one "
            "image): "
            + ", ".join(f"{role} uses {image.split('@')[-1]}" for role, image in images.items()),
        )
    errs.raise_if_any()
    config: dict[str, Any] = {
        "jobName": name,
        "image": next(iter(images.values())),
        "taskRoles": roles,
        "retryCount": retry or 0,
        "extras": extras,
    }
    if isinstance(virtual_cluster, str) and virtual_cluster != DEFAULT_VIRTUAL_CLUSTER:
        config["virtualCluster"] = virtual_cluster
    return config, paths, project


def _deployments(value: Any, errs: Errors) -> dict[str, dict[str, dict]]:
    """Each deployment's pre- and postCommands by task role."""
    found: dict[str, dict[str, dict]] = {}
    if value is None:
        return found
    if not isinstance(value, list):
        errs.add("deployments", f"must be a list, not {describe(value)}")
        return found
    for position, item in enumerate(value):
        path = f"deployments[{position}]"
        item = _mapping(item, path, errs, ("protocolVersion", "name", "taskRoles"))
        name = item.get("name")
        if not isinstance(name, str) or not name:
            errs.add(f"{path}.name", "is required")
            continue
        if name in found:
            errs.add(f"{path}.name", f"duplicate deployment {name}")
            continue
        roles = _mapping(item.get("taskRoles"), f"{path}.taskRoles", errs)
        found[name] = {}
        for role, commands in roles.items():
            role_path = f"{path}.taskRoles.{role}"
            commands = _mapping(commands, role_path, errs, ("preCommands", "postCommands"))
            found[name][role] = {
                key: _strings(commands.get(key), f"{role_path}.{key}", errs)
                for key in ("preCommands", "postCommands")
            }
    return found


def _role(
    name: str,
    role: dict,
    path: str,
    errs: Errors,
    prerequisites: dict[str, dict[str, dict]],
    parameters: dict,
    deployment: dict[str, dict],
) -> tuple[dict, str] | None:
    _mapping(role, path, errs, ROLE_KEYS)
    instances = _int(role.get("instances"), f"{path}.instances", errs, minimum=1) or 1
    completion = _mapping(
        role.get("completion"),
        f"{path}.completion",
        errs,
        ("minFailedInstances", "minSucceededInstances"),
    )
    retries = _int(role.get("taskRetryCount"), f"{path}.taskRetryCount", errs, minimum=0)
    if retries:
        errs.add(
            f"{path}.taskRetryCount",
            "must be 0: the portal retries a whole job (jobRetryCount), never one task",
        )
    for position, wanted in enumerate(
        _strings(role.get("prerequisites"), f"{path}.prerequisites", errs)
    ):
        if not any(wanted in by_name for by_name in prerequisites.values()):
            errs.add(f"{path}.prerequisites[{position}]", f"prerequisite {wanted} does not exist")
    named: dict[str, dict] = {}
    for field, kind in PREREQUISITE_FIELDS.items():
        named_as = role.get(field)
        if named_as is None:
            if field == "dockerImage":
                errs.add(
                    f"{path}.dockerImage", "is required: the name of a dockerimage prerequisite"
                )
            continue
        if not isinstance(named_as, str) or named_as not in prerequisites[kind]:
            errs.add(f"{path}.{field}", f"prerequisite {named_as} does not exist")
            continue
        named[field] = prerequisites[kind][named_as]
    options = _mapping(
        role.get("extraContainerOptions"),
        f"{path}.extraContainerOptions",
        errs,
        ("shmMB", "infiniband"),
    )
    shm = _int(options.get("shmMB"), f"{path}.extraContainerOptions.shmMB", errs, minimum=1)
    if options.get("infiniband"):
        errs.add(
            f"{path}.extraContainerOptions.infiniband",
            "InfiniBand devices are not offered by any slave of this portal",
        )
    resources = role.get("resourcePerInstance")
    if not isinstance(resources, dict):
        errs.add(f"{path}.resourcePerInstance", "is required: cpu, memoryMB and gpu")
        resources = {}
    _mapping(resources, f"{path}.resourcePerInstance", errs, ("cpu", "memoryMB", "gpu", "ports"))
    numbers = {}
    for key in ("cpu", "memoryMB", "gpu"):
        numbers[key] = _int(resources.get(key), f"{path}.resourcePerInstance.{key}", errs)
        if key in resources and numbers[key] is None:
            continue
        if key not in resources:
            errs.add(f"{path}.resourcePerInstance.{key}", "is required")
    ports = _mapping(resources.get("ports"), f"{path}.resourcePerInstance.ports", errs)
    port_list = []
    for label, number in ports.items():
        if not ROLE_NAME_RE.fullmatch(label):
            errs.add(
                f"{path}.resourcePerInstance.ports.{label}",
                r"labels must match ^[a-zA-Z_][a-zA-Z0-9_]*$",
            )
        count = _int(number, f"{path}.resourcePerInstance.ports.{label}", errs)
        port_list.append({"label": label, "beginAt": 0, "portNumber": count})
    commands = _strings(role.get("commands"), f"{path}.commands", errs, required=True)
    around = deployment.get(name, {})
    lines = [*around.get("preCommands", []), *commands, *around.get("postCommands", [])]
    context = {
        "$parameters": parameters,
        "$script": named.get("script"),
        "$output": named.get("output"),
        "$data": named.get("data"),
    }
    command = render("\n".join(line.strip() for line in lines), context)
    failed = _count(
        completion.get("minFailedInstances"),
        f"{path}.completion.minFailedInstances",
        errs,
        instances=instances,
        failed=True,
    )
    succeeded = _count(
        completion.get("minSucceededInstances"),
        f"{path}.completion.minSucceededInstances",
        errs,
        instances=instances,
        failed=False,
    )
    config = {
        "name": name,
        "taskNumber": instances,
        "cpuNumber": numbers["cpu"],
        "memoryMB": numbers["memoryMB"],
        "gpuNumber": numbers["gpu"],
        "portList": port_list,
        "command": command,
        "minFailedTaskCount": failed,
        "minSucceededTaskCount": succeeded,
    }
    if shm is not None:
        config["shmMB"] = shm
    return config, str(role.get("dockerImage"))


_ROLE_FIELDS = {
    "name": "",
    "taskNumber": ".instances",
    "cpuNumber": ".resourcePerInstance.cpu",
    "memoryMB": ".resourcePerInstance.memoryMB",
    "gpuNumber": ".resourcePerInstance.gpu",
    "shmMB": ".extraContainerOptions.shmMB",
    "portList": ".resourcePerInstance.ports",
    "command": ".commands",
    "minFailedTaskCount": ".completion.minFailedInstances",
    "minSucceededTaskCount": ".completion.minSucceededInstances",
}


def _role_paths(position: int, path: str) -> dict[str, str]:
    paths = {f"taskRoles[{position}]": path}
    for field, suffix in _ROLE_FIELDS.items():
        paths[f"taskRoles[{position}].{field}"] = path + suffix
    return paths


def paths_back(error: SpecError, paths: dict[str, str]) -> SpecError:
    """The errors of the config a protocol became, at the protocol's paths (the longest known
    prefix of each path; ``jobEnvs`` and paths the protocol has no field for keep theirs)."""
    found: list[FieldError] = []
    for item in error.errors:
        best = max(
            (p for p in paths if item.path == p or item.path.startswith((p + ".", p + "["))),
            key=len,
            default=None,
        )
        path = item.path if best is None else paths[best] + item.path[len(best) :]
        moved = FieldError(path, item.message)
        if moved not in found:
            found.append(moved)
    return SpecError(found)
