"""An app's definition in Tapis' shape, checked field by field (every problem at once).

The JSON (REST, the app page's editor) follows Tapis' app definition where Tapis has a field,
with GPULab's resource and duration fields where the portal needs its own:

    {"id": "img-classify", "version": "0.1", "description": "...",
     "visibility": "private" | "project" | "everyone", "project": "demo",
     "containerImage": "gpuportal/busybox:latest", "command": "sh /app/run.sh",
     "jobAttributes": {
        "execSystemId": "1",
        "parameterSet": {
            "appArgs": [{"name", "description", "inputMode", "arg"}],
            "envVariables": [{"key", "value", "description"}]},
        "fileInputs": [{"name", "description", "inputMode", "sourceUrl", "targetPath"}],
        "resources": {"gpus": 0, "cpus": 1, "cpuMemoryGb": 1, ...},
        "scheduling": {"minDuration": "1 minute", "maxDuration": "1 hour"}}}

The image, resources and durations are checked by building a GPULab v2 document from them and
running the portal's own validation, so an app can never hold what a job may not.
"""

from __future__ import annotations

import re
import shlex

from core.timefmt import utc_z
from jobs.execution.staging import input_source_error, input_target_error
from jobs.spec import FieldError, SpecError, parse_job_document
from jobs.spec.v2_docker import ENV_NAME_HINT, ENV_NAME_RE, reserved_env_reason
from jobs.user_actions.services import spec_defaults
from tapis.models import App
from tapis.systems import exec_system_cluster

ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,79}")
VERSION_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
NAME_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,79}")
ARG_MODES = ("REQUIRED", "FIXED", "INCLUDE_BY_DEFAULT", "INCLUDE_ON_DEMAND")
INPUT_MODES = ("REQUIRED", "OPTIONAL", "FIXED")
TOP_FIELDS = (
    "id",
    "version",
    "description",
    "visibility",
    "project",
    "containerImage",
    "command",
    "jobAttributes",
    # Server-set, accepted (a definition fetched from the portal can be sent back) and ignored.
    "owner",
    "locked",
    "created",
    "updated",
)
JOB_ATTRIBUTE_FIELDS = ("execSystemId", "parameterSet", "fileInputs", "resources", "scheduling")
PARAMETER_SET_FIELDS = ("appArgs", "envVariables")
ARG_FIELDS = ("name", "description", "inputMode", "arg", "notes")
ENV_FIELDS = ("key", "value", "description")
INPUT_FIELDS = ("name", "description", "inputMode", "sourceUrl", "targetPath", "notes")
DURATION_FIELDS = ("minDuration", "maxDuration")
TEXT_MAX = 4000


class _Errors(list):
    def add(self, path: str, message: str) -> None:
        self.append(FieldError(path, message))


def _object(value, path: str, errs: _Errors, known: tuple[str, ...]) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        errs.add(path, "must be an object")
        return {}
    for key in value:
        if key not in known:
            errs.add(f"{path}.{key}" if path else str(key), "unknown field")
    return value


def _list(value, path: str, errs: _Errors) -> list:
    if value is None:
        return []
    if not isinstance(value, list):
        errs.add(path, "must be a list")
        return []
    return value


def _text(value, path: str, errs: _Errors, *, required=False, pattern=None, max_length=TEXT_MAX):
    if value is None or value == "":
        if required:
            errs.add(path, "is required")
        return ""
    if not isinstance(value, str):
        errs.add(path, "must be a string")
        return ""
    if "\x00" in value:
        errs.add(path, "must not contain NUL characters")
        return ""
    if len(value) > max_length:
        errs.add(path, f"must be at most {max_length} characters")
    elif pattern is not None and not pattern.fullmatch(value):
        errs.add(path, f"must match {pattern.pattern}")
    return value


def _args(items: list, path: str, errs: _Errors) -> list[dict]:
    out, seen = [], set()
    for index, item in enumerate(items):
        where = f"{path}[{index}]"
        item = _object(item, where, errs, ARG_FIELDS)
        name = _text(item.get("name"), f"{where}.name", errs, required=True, pattern=NAME_RE)
        if name and name in seen:
            errs.add(f"{where}.name", f"duplicate argument name {name!r}")
        seen.add(name)
        mode = item.get("inputMode") or "INCLUDE_ON_DEMAND"
        if mode not in ARG_MODES:
            errs.add(f"{where}.inputMode", f"must be one of {', '.join(ARG_MODES)}")
        arg = _text(item.get("arg"), f"{where}.arg", errs)
        if mode == "FIXED" and not arg:
            errs.add(f"{where}.arg", "a FIXED argument needs its value")
        out.append(
            {
                "name": name,
                "description": _text(item.get("description"), f"{where}.description", errs),
                "inputMode": mode,
                "arg": arg,
            }
        )
    return out


def _env(items: list, path: str, errs: _Errors) -> list[dict]:
    out, seen = [], set()
    for index, item in enumerate(items):
        where = f"{path}[{index}]"
        item = _object(item, where, errs, ENV_FIELDS)
        key = item.get("key")
        if not isinstance(key, str) or not ENV_NAME_RE.fullmatch(key):
            errs.add(f"{where}.key", ENV_NAME_HINT)
        elif reason := reserved_env_reason(key):
            errs.add(f"{where}.key", reason)
        elif key in seen:
            errs.add(f"{where}.key", f"duplicate variable {key!r}")
        seen.add(key)
        value = item.get("value", "")
        if isinstance(value, bool | int) and not isinstance(value, bool):
            value = str(value)
        out.append(
            {
                "key": key if isinstance(key, str) else "",
                "value": _text(value, f"{where}.value", errs),
                "description": _text(item.get("description"), f"{where}.description", errs),
            }
        )
    return out


def _inputs(items: list, path: str, errs: _Errors) -> list[dict]:
    out, seen = [], set()
    for index, item in enumerate(items):
        where = f"{path}[{index}]"
        item = _object(item, where, errs, INPUT_FIELDS)
        name = _text(item.get("name"), f"{where}.name", errs, required=True, pattern=NAME_RE)
        if name and name in seen:
            errs.add(f"{where}.name", f"duplicate input name {name!r}")
        seen.add(name)
        mode = item.get("inputMode") or "OPTIONAL"
        if mode not in INPUT_MODES:
            errs.add(f"{where}.inputMode", f"must be one of {', '.join(INPUT_MODES)}")
        source = _text(item.get("sourceUrl"), f"{where}.sourceUrl", errs)
        if source and (reason := input_source_error(source)):
            errs.add(f"{where}.sourceUrl", reason)
        elif mode == "FIXED" and not source:
            errs.add(f"{where}.sourceUrl", "a FIXED input needs its source")
        target = _text(item.get("targetPath"), f"{where}.targetPath", errs) or name
        if target and (reason := input_target_error(target)):
            errs.add(f"{where}.targetPath", reason)
        out.append(
            {
                "name": name,
                "description": _text(item.get("description"), f"{where}.description", errs),
                "inputMode": mode,
                "sourceUrl": source,
                "targetPath": target,
            }
        )
    return out


def _check_as_job(*, image: str, resources: dict, scheduling: dict, errs: _Errors) -> None:
    """The image, resources and durations, judged by the portal's own job validation."""
    document = {
        "name": "app-check",
        "request": {
            "resources": resources,
            "docker": {"image": image, "command": ""},
            "scheduling": scheduling,
        },
    }
    renames = {
        "request.docker.image": "containerImage",
        "request.resources": "jobAttributes.resources",
        "request.scheduling": "jobAttributes.scheduling",
    }
    try:
        parse_job_document(document, defaults=spec_defaults())
    except SpecError as exc:
        for error in exc.errors:
            path = error.path
            for old, new in renames.items():
                if path == old or path.startswith(old + "."):
                    path = new + path[len(old) :]
                    break
            errs.add(path, error.message)


def app_definition_parse(data) -> dict:
    """The model fields of a definition (project as given, a name), or SpecError listing every
    problem with its field path."""
    errs = _Errors()
    if not isinstance(data, dict):
        raise SpecError([FieldError("(document)", "an app definition must be a JSON object")])
    _object(data, "", errs, TOP_FIELDS)
    attrs = _object(data.get("jobAttributes"), "jobAttributes", errs, JOB_ATTRIBUTE_FIELDS)
    params = _object(
        attrs.get("parameterSet"), "jobAttributes.parameterSet", errs, PARAMETER_SET_FIELDS
    )
    visibility = data.get("visibility") or App.Visibility.PRIVATE
    if visibility not in App.Visibility.values:
        errs.add("visibility", f"must be one of {', '.join(App.Visibility.values)}")
    project = _text(data.get("project"), "project", errs, max_length=200)
    if visibility == App.Visibility.PROJECT and not project:
        errs.add("project", "is required when visibility is project")
    image = _text(data.get("containerImage"), "containerImage", errs, required=True)
    command = _text(data.get("command"), "command", errs)
    if command:
        try:
            shlex.split(command)
        except ValueError as exc:
            errs.add("command", f"cannot be split into words: {exc}")
    resources = attrs.get("resources")
    if resources is None:
        resources = {"gpus": 0, "cpus": 1, "cpuMemoryGb": 1}
    scheduling = _object(attrs.get("scheduling"), "jobAttributes.scheduling", errs, DURATION_FIELDS)
    if image and isinstance(resources, dict):
        _check_as_job(image=image, resources=resources, scheduling=scheduling, errs=errs)
    elif not isinstance(resources, dict):
        errs.add("jobAttributes.resources", "must be an object")
    exec_system = attrs.get("execSystemId")
    if isinstance(exec_system, int) and not isinstance(exec_system, bool):
        exec_system = str(exec_system)
    exec_system = _text(exec_system, "jobAttributes.execSystemId", errs, max_length=20)
    if exec_system:
        cluster_id, reason = exec_system_cluster(exec_system)
        if cluster_id is None:
            errs.add("jobAttributes.execSystemId", reason)
    fields = {
        "app_id": _text(data.get("id"), "id", errs, required=True, pattern=ID_RE),
        "version": _text(data.get("version"), "version", errs, required=True, pattern=VERSION_RE),
        "description": _text(data.get("description"), "description", errs),
        "visibility": visibility,
        "project": project,
        "image": image,
        "command": command,
        "arguments": _args(
            _list(params.get("appArgs"), "jobAttributes.parameterSet.appArgs", errs),
            "jobAttributes.parameterSet.appArgs",
            errs,
        ),
        "env": _env(
            _list(params.get("envVariables"), "jobAttributes.parameterSet.envVariables", errs),
            "jobAttributes.parameterSet.envVariables",
            errs,
        ),
        "file_inputs": _inputs(
            _list(attrs.get("fileInputs"), "jobAttributes.fileInputs", errs),
            "jobAttributes.fileInputs",
            errs,
        ),
        "resources": resources if isinstance(resources, dict) else {},
        "scheduling": {k: scheduling[k] for k in DURATION_FIELDS if k in scheduling},
        "exec_system_id": exec_system,
    }
    if errs:
        raise SpecError(list(errs))
    return fields


def app_to_json(app: App) -> dict:
    """The app in the definition's shape (what ``app_definition_parse`` reads back)."""
    return {
        "id": app.app_id,
        "version": app.version,
        "description": app.description,
        "owner": app.owner.username,
        "visibility": app.visibility,
        "project": app.project.name if app.project is not None else None,
        "containerImage": app.image,
        "command": app.command,
        "locked": app.locked,
        "created": utc_z(app.created),
        "updated": utc_z(app.updated),
        "jobAttributes": {
            "execSystemId": app.exec_system_id or None,
            "parameterSet": {"appArgs": app.arguments, "envVariables": app.env},
            "fileInputs": app.file_inputs,
            "resources": app.resources,
            "scheduling": app.scheduling,
        },
    }
