"""Submitting a job from an app: a Tapis submit request -> a GPULab v2 document -> an ordinary
portal job (``jobs.user_actions.services.job_submit``), so gpulab-cli and the GPULab API see it as any other.

How the request and the app combine (docs/tapis.md, "Arguments"):
- ``parameterSet.appArgs`` items are ``{arg, name?, meta?: {name, required}, include?}``; an item
  naming one of the app's arguments (``name`` or ``meta.name``) sets that argument's value;
  the others are the request's own arguments.
- The command is the app's command, then the request's own arguments, then the app's arguments
  (Tapis: "arguments specified in the application definition are appended to those in the
  submission request"). REQUIRED app arguments must end with a value (the request's or the
  app's default); FIXED ones cannot be set; INCLUDE_BY_DEFAULT ones are included unless the
  request names them with ``include: false``; INCLUDE_ON_DEMAND ones only when named.
- ``parameterSet.envVariables`` ``[{key, value}]`` override or add to the app's variables.
- ``fileInputs`` ``[{name, sourceUrl, targetPath}]`` by name override the app's inputs' sources
  (FIXED ones cannot be changed); REQUIRED inputs need a source; unnamed extra inputs are added.
- Macros (``tapis.macros``) are substituted in arguments and environment values.
- The portal's own settings without a Tapis field, the project and GPULab's resources and
  scheduling, come in ``notes`` (``notes.project``, ``notes.resources``, ``notes.scheduling``):
  tapipy sends only the fields of Tapis' ReqSubmitJob, and ``notes`` is its free object. Raw
  JSON clients may also give them as top-level ``project``/``resources``/``scheduling``.
Every problem is reported at once with its field path, and nothing is written unless all pass.
"""

from __future__ import annotations

import json
import math
import uuid as uuid_module
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from accounts.models import Membership, Project
from core.errors import Conflict, NotAllowed
from jobs.execution.staging import input_source_error, input_target_error
from jobs.models import Job, JobPullSecret
from jobs.selectors import job_sees_full
from jobs.spec import FieldError, SpecError, format_duration, parse_job_document
from jobs.spec.checks import Errors
from jobs.transitions import Stage, job_stage_record
from jobs.user_actions.services import job_submit, spec_defaults
from tapis.macros import macro_values, substitute, tapis_environment
from tapis.models import App
from tapis.notices import tapis_subscription_event_publish
from tapis.selectors import app_get_visible
from tapis.subscriptions import TapisSubscribe, tapis_subscribes_check, tapis_subscriptions_create
from tapis.systems import exec_system_cluster

REQUEST_FIELDS = {
    "name",
    "appId",
    "appVersion",
    "description",
    "execSystemId",
    "nodeCount",
    "coresPerNode",
    "memoryMB",
    "maxMinutes",
    "parameterSet",
    "fileInputs",
    "tags",
    "notes",
    "subscriptions",
    # Portal extensions for raw JSON clients: the project to run in, GPULab resources and
    # durations overriding the app's (tapipy users put them in notes; docs/tapis.md).
    "project",
    "resources",
    "scheduling",
}
# Tapis fields accepted for compatibility and ignored: they name Tapis systems and tenants that
# the portal does not have (it has one execution system per cluster and its own archive).
IGNORED_FIELDS = {
    "owner",
    "tenant",
    "jobType",
    "archiveOnAppError",
    "dynamicExecSystem",
    "execSystemLogicalQueue",
    "archiveSystemId",
    "archiveSystemDir",
    "isMpi",
    "mpiCmd",
    "cmdPrefix",
}
PARAMETER_SET_FIELDS = {"appArgs", "envVariables", "containerArgs", "schedulerOptions"}
NAME_MAX = 255
# notes: Tapis' free object, kept with the job; the portal reads its own settings from it.
NOTES_MAX_BYTES = 16 * 1024
PORTAL_NOTES = ("project", "resources", "scheduling")
TAGS_MAX = 50
TAG_MAX_CHARS = 128


class _Errors(list):
    def add(self, path: str, message: str) -> None:
        self.append(FieldError(path, message))


def _text(value, path: str, errs: _Errors, *, required: bool = False) -> str:
    if value is None or value == "":
        if required:
            errs.add(path, "is required")
        return ""
    if not isinstance(value, str):
        errs.add(path, "must be a string")
        return ""
    return value


def _list(value, path: str, errs: _Errors) -> list:
    if value is None:
        return []
    if not isinstance(value, list):
        errs.add(path, "must be a list")
        return []
    return value


def _int(value, path: str, errs: _Errors, *, minimum: int = 1) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        errs.add(path, f"must be an integer >= {minimum}")
        return None
    return value


def _arg_name(item: dict) -> str:
    meta = item.get("meta")
    name = item.get("name")
    if not name and isinstance(meta, dict):
        name = meta.get("name")
    return name if isinstance(name, str) else ""


def _arg_spec(item: dict) -> dict:
    """A request argument in Tapis' JobArgSpec shape (the older ``meta: {name, required}`` of
    the seed becomes ``name`` and ``notes.required``), as kept for resubmit."""
    spec = {"arg": item.get("arg") or "", "name": _arg_name(item) or None}
    spec["include"] = item.get("include", True)
    notes = dict(item.get("notes") or {})
    if isinstance(item.get("meta"), dict) and "required" in item["meta"]:
        notes["required"] = bool(item["meta"]["required"])
    if item.get("description"):
        spec["description"] = item["description"]
    if notes:
        spec["notes"] = notes
    return {key: value for key, value in spec.items() if value is not None}


def combine_args(app: App, request_args: list, errs: _Errors, path: str) -> list[str]:
    """The final argument texts (before macros), or errors naming the request's items."""
    by_name = {arg["name"]: arg for arg in app.arguments}
    named: dict[str, tuple[int, dict]] = {}
    own: list[str] = []
    for index, item in enumerate(request_args):
        where = f"{path}[{index}]"
        if not isinstance(item, dict):
            errs.add(where, 'must be an object like {"arg": "--flag"}')
            continue
        text = item.get("arg", "")
        if text is None:
            text = ""
        if not isinstance(text, str):
            errs.add(f"{where}.arg", "must be a string")
            continue
        include = item.get("include", True)
        if not isinstance(include, bool):
            errs.add(f"{where}.include", "must be true or false")
            continue
        meta = item.get("meta")
        if meta is not None and not isinstance(meta, dict):
            errs.add(f"{where}.meta", 'must be an object like {"name": ..., "required": ...}')
            continue
        notes = item.get("notes")
        if not isinstance(notes, dict):
            notes = {}
        required = bool((meta or {}).get("required", notes.get("required", False)))
        name = _arg_name(item)
        if name in by_name:
            if by_name[name]["inputMode"] == "FIXED":
                errs.add(f"{where}.name", f"argument {name!r} is fixed by the app")
            elif name in named:
                errs.add(f"{where}.name", f"argument {name!r} is given twice")
            else:
                named[name] = (index, {"arg": text, "include": include, "required": required})
            continue
        if required and not text.strip():
            errs.add(f"{where}.arg", f"required argument {name or index!r} has no value")
        elif include and text.strip():
            own.append(text)
    appended: list[str] = []
    for arg in app.arguments:
        given = named.get(arg["name"], (None, None))[1]
        mode = arg["inputMode"]
        value = arg["arg"]
        if given is not None and given["arg"].strip():
            value = given["arg"]
        if mode == "FIXED":
            appended.append(value)
        elif mode == "REQUIRED":
            if not value.strip():
                errs.add(path, f"required argument {arg['name']!r} is missing")
            else:
                appended.append(value)
        elif mode == "INCLUDE_BY_DEFAULT":
            if (given is None or given["include"]) and value.strip():
                appended.append(value)
        elif given is not None and given["include"] and value.strip():  # INCLUDE_ON_DEMAND
            appended.append(value)
    return own + appended


def combine_env(app: App, request_env: list, errs: _Errors, path: str) -> dict[str, str]:
    env = {item["key"]: item["value"] for item in app.env}
    for index, item in enumerate(request_env):
        where = f"{path}[{index}]"
        if not isinstance(item, dict):
            errs.add(where, 'must be an object like {"key": "NAME", "value": "..."}')
            continue
        key = item.get("key")
        if not isinstance(key, str) or not key:
            errs.add(f"{where}.key", "is required")
            continue
        value = item.get("value", "")
        if isinstance(value, int | float) and not isinstance(value, bool):
            value = str(value)
        if not isinstance(value, str):
            errs.add(f"{where}.value", "must be a string")
            continue
        env[key] = value
    return env


def combine_inputs(app: App, request_inputs: list, errs: _Errors, path: str) -> list[dict]:
    """The inputs to stage: [{name, source, target}]."""
    by_name = {item["name"]: item for item in app.file_inputs}
    given: dict[str, tuple[int, dict]] = {}
    extra: list[tuple[int, dict]] = []
    for index, item in enumerate(request_inputs):
        where = f"{path}[{index}]"
        if not isinstance(item, dict):
            errs.add(where, 'must be an object like {"name": ..., "sourceUrl": ...}')
            continue
        name = item.get("name") or ""
        if not isinstance(name, str):
            errs.add(f"{where}.name", "must be a string")
            continue
        if name in by_name:
            if by_name[name]["inputMode"] == "FIXED":
                errs.add(f"{where}.name", f"input {name!r} is fixed by the app")
            elif name in given:
                errs.add(f"{where}.name", f"input {name!r} is given twice")
            else:
                given[name] = (index, item)
        else:
            extra.append((index, item))
    out = []
    for app_input in app.file_inputs:
        name = app_input["name"]
        given_at, item = given.get(name, (None, {}))
        source = item.get("sourceUrl") or app_input["sourceUrl"]
        target = item.get("targetPath") or app_input["targetPath"]
        where = f"{path}[{given_at}]" if given_at is not None else path
        if not source:
            if app_input["inputMode"] == "REQUIRED":
                errs.add(where, f"required input {name!r} is missing")
            continue
        out.append((where, {"name": name, "source": source, "target": target}))
    for index, item in extra:
        where = f"{path}[{index}]"
        source = item.get("sourceUrl")
        target = item.get("targetPath") or item.get("name")
        if not source:
            errs.add(f"{where}.sourceUrl", "is required for an input the app does not define")
            continue
        out.append(
            (where, {"name": item.get("name") or target, "source": source, "target": target})
        )
    checked = []
    targets = set()
    for where, item in out:
        source, target = item["source"], item["target"]
        if not isinstance(source, str):
            errs.add(f"{where}.sourceUrl", "must be a string")
            continue
        if reason := input_source_error(source):
            errs.add(f"{where}.sourceUrl", reason)
            continue
        if not isinstance(target, str):
            errs.add(f"{where}.targetPath", "must be a string")
            continue
        if reason := input_target_error(target):
            errs.add(f"{where}.targetPath", reason)
            continue
        if item["target"] in targets:
            errs.add(f"{where}.targetPath", f"two inputs land on {item['target']!r}")
            continue
        targets.add(item["target"])
        checked.append(item)
    return checked


COMMAND_PATH = "request.docker.command"


def tapis_subscriptions(items: list, errs: _Errors) -> list[TapisSubscribe]:
    """Tapis' ReqSubscribe items, checked (tapis/subscriptions.py); the job's Tapis
    subscriptions once it is stored, delivered in Tapis' shape (they are not the document's
    ``request.notifications``, whose events are portal states)."""
    found = Errors()
    checked = tapis_subscribes_check(items, found)
    for problem in found.items:
        errs.add(problem.path, problem.message)
    return checked


def _tapis_paths(exc: SpecError) -> SpecError:
    """The generated document's command errors (the site's bounds on length and words) under
    the arguments."""
    return SpecError([_tapis_path(e) for e in exc.errors])


def _tapis_path(e: FieldError) -> FieldError:
    if e.path == COMMAND_PATH:
        return FieldError("parameterSet.appArgs", f"with the app's command, {e.message}")
    return e


def _notes(value, errs: _Errors) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        errs.add("notes", "must be an object")
        return {}
    if len(json.dumps(value)) > NOTES_MAX_BYTES:
        errs.add("notes", f"must be at most {NOTES_MAX_BYTES} bytes as JSON")
        return {}
    return value


def _tags(value, errs: _Errors) -> None:
    if value is None:
        return
    if not isinstance(value, list):
        errs.add("tags", "must be a list of strings")
        return
    if len(value) > TAGS_MAX:
        errs.add("tags", f"at most {TAGS_MAX} tags")
    for index, tag in enumerate(value[:TAGS_MAX]):
        if not isinstance(tag, str) or not tag or len(tag) > TAG_MAX_CHARS:
            errs.add(f"tags[{index}]", f"must be a string of 1 to {TAG_MAX_CHARS} characters")


def _portal_setting(request: dict, notes: dict, key: str, errs: _Errors) -> tuple[Any, str]:
    """One of the portal's own settings and the path it came from: ``notes.<key>`` (what
    tapipy can send) or the request's top-level ``<key>`` (raw JSON); both only if equal."""
    top, noted = request.get(key), notes.get(key)
    if noted is None:
        return top, key
    if top is not None and top != noted:
        errs.add(f"notes.{key}", f"differs from the request's {key}: give it once")
    return noted, f"notes.{key}"


def _project(user, value, path: str, errs: _Errors) -> Project | None:
    if value is None:
        mine = list(Project.objects.filter(memberships__user=user).order_by("name")[:2])
        if len(mine) == 1:
            return mine[0]
        errs.add(
            "project",
            "is required: you are in several projects (name one in notes.project, or project "
            "in a JSON request)"
            if mine
            else "you are in no project",
        )
        return None
    if not isinstance(value, str) or not value:
        errs.add(path, "must be a project name or URN")
        return None
    name = value.rsplit("+", 1)[-1] if value.startswith("urn:") else value
    project = Project.objects.filter(name=name).first()
    if project is None:
        errs.add(path, f"no project {name!r}")
    return project


def _resources(app: App, request: dict, notes: dict, errs: _Errors) -> tuple[dict, dict]:
    """GPULab resources and scheduling: the app's, then the request's (``notes.resources``
    and ``notes.scheduling``, or the top-level ones), then Tapis' own fields (coresPerNode,
    memoryMB, maxMinutes, execSystemId), which win over the same GPULab field."""
    resources = dict(app.resources)
    scheduling = dict(app.scheduling)
    for key, target in (("resources", resources), ("scheduling", scheduling)):
        value, path = _portal_setting(request, notes, key, errs)
        if value is None:
            continue
        if not isinstance(value, dict):
            errs.add(path, "must be an object of GPULab fields")
            continue
        target.update(value)
    if _int(request.get("nodeCount"), "nodeCount", errs) not in (None, 1):
        errs.add("nodeCount", "must be 1 (a job runs in one container)")
    if (cores := _int(request.get("coresPerNode"), "coresPerNode", errs)) is not None:
        resources["cpus"] = cores
    if (memory := _int(request.get("memoryMB"), "memoryMB", errs)) is not None:
        resources["cpuMemoryGb"] = max(1, math.ceil(memory / 1024))
    if (minutes := _int(request.get("maxMinutes"), "maxMinutes", errs)) is not None:
        scheduling["maxDuration"] = format_duration(minutes * 60)
    exec_system = request.get("execSystemId") or app.exec_system_id
    if isinstance(exec_system, int) and not isinstance(exec_system, bool):
        exec_system = str(exec_system)
    if exec_system and not isinstance(exec_system, str):
        errs.add("execSystemId", "must be a system id (GET /api/tapis/v3/systems lists them)")
    elif exec_system:
        cluster_id, reason = exec_system_cluster(exec_system)
        if cluster_id is None:
            errs.add("execSystemId", reason)
        else:
            resources["clusterId"] = cluster_id
    return resources, scheduling


@dataclass
class Prepared:
    """A checked Tapis request: the app, the project and the GPULab document to submit."""

    app: App
    project: Project
    job_uuid: uuid_module.UUID
    document: dict
    origin: dict
    inputs: list[dict]
    subscribes: list[TapisSubscribe]


def tapis_job_prepare(*, user, request, resubmit: bool = False) -> Prepared:
    """Every rule of a Tapis request against its app, nothing written; SpecError (400) lists
    every problem, NotAllowed (403) for a project the user is not in. The generated document's
    own GPULab rules are checked by ``job_submit`` (``tapis_job_check`` runs them too).

    ``resubmit``: the request of an earlier job, which may run a version deleted since."""
    errs = _Errors()
    if not isinstance(request, dict):
        raise SpecError([FieldError("(document)", "a job request must be a JSON object")])
    for key in request:
        if key not in REQUEST_FIELDS and key not in IGNORED_FIELDS:
            errs.add(str(key), "unknown field")
    name = _text(request.get("name"), "name", errs, required=True)
    if len(name) > NAME_MAX:
        errs.add("name", f"must be at most {NAME_MAX} characters")
    app_id = _text(request.get("appId"), "appId", errs, required=True)
    version = _text(request.get("appVersion"), "appVersion", errs, required=True)
    description = request.get("description")
    if description is not None and not isinstance(description, str):
        errs.add("description", "must be a string")
    app = None
    if app_id and version:
        app = app_get_visible(user, app_id, version, deleted=resubmit)
        if app is None and app_get_visible(user, app_id, version, deleted=True) is not None:
            errs.add(
                "appVersion",
                f"app {app_id} version {version} was deleted: it takes no new jobs (its "
                "jobs can still be resubmitted)",
            )
        elif app is None:
            errs.add("appId", f"no app {app_id} version {version} that you may use")
    params = request.get("parameterSet") or {}
    if not isinstance(params, dict):
        errs.add("parameterSet", "must be an object")
        params = {}
    for key in params:
        if key not in PARAMETER_SET_FIELDS:
            errs.add(f"parameterSet.{key}", "unknown field")
    for key in ("containerArgs", "schedulerOptions"):
        if params.get(key):
            errs.add(f"parameterSet.{key}", "not supported: use resources and scheduling")
    notes = _notes(request.get("notes"), errs)
    _tags(request.get("tags"), errs)
    project = _project(user, *_portal_setting(request, notes, "project", errs), errs)
    if project is not None and not Membership.objects.filter(user=user, project=project).exists():
        raise NotAllowed(f"you are not a member of project {project.name}")
    if app is None:
        raise SpecError(list(errs))
    args = combine_args(
        app,
        _list(params.get("appArgs"), "parameterSet.appArgs", errs),
        errs,
        "parameterSet.appArgs",
    )
    env = combine_env(
        app,
        _list(params.get("envVariables"), "parameterSet.envVariables", errs),
        errs,
        "parameterSet.envVariables",
    )
    inputs = combine_inputs(
        app, _list(request.get("fileInputs"), "fileInputs", errs), errs, "fileInputs"
    )
    resources, scheduling = _resources(app, request, notes, errs)
    subscriptions = tapis_subscriptions(
        _list(request.get("subscriptions"), "subscriptions", errs), errs
    )
    if errs:
        raise SpecError(list(errs))
    assert project is not None  # _project added its reason to errs otherwise

    job_uuid = uuid_module.uuid4()
    values = macro_values(
        job_uuid=str(job_uuid),
        job_name=name,
        owner=user.username,
        app_id=app.app_id,
        app_version=app.version,
    )
    words = [substitute(arg, values) for arg in args]
    command = " ".join(part for part in [app.command, *words] if part)
    document: dict[str, Any] = {
        "name": name,
        "description": description,
        "request": {
            "resources": resources,
            "docker": {
                "image": app.image,
                "command": command,
                # Tapis' own variables first: the app's and the request's may override them.
                "environment": {
                    **tapis_environment(values),
                    **{key: substitute(value, values) for key, value in env.items()},
                },
            },
            "scheduling": scheduling,
        },
    }
    kept = {key: value for key, value in request.items() if key in REQUEST_FIELDS}
    if params.get("appArgs"):
        kept["parameterSet"] = {**params, "appArgs": [_arg_spec(a) for a in params["appArgs"]]}
    origin = {
        "tapis": kept,
        "project": project.name,
        "appArgs": words,
    }
    return Prepared(app, project, job_uuid, document, origin, inputs, subscriptions)


def tapis_job_check(*, user, request) -> Prepared:
    """``tapis_job_prepare`` and the GPULab rules of the generated document (the web form's
    check as the user types); writes nothing."""
    prepared = tapis_job_prepare(user=user, request=request)
    try:
        parse_job_document(prepared.document, defaults=spec_defaults())
    except SpecError as exc:
        raise _tapis_paths(exc) from None
    return prepared


def tapis_job_submit(
    *, user, request, resubmitted_from: Job | None = None, hold: bool = False
) -> Job:
    """Check a Tapis submit request against its app and store the job (PENDING stage)."""
    resubmit = resubmitted_from is not None
    prepared = tapis_job_prepare(user=user, request=request, resubmit=resubmit)
    app = prepared.app
    with transaction.atomic():
        # Locks the version (compare-and-swap): an owner's edit racing this submit loses, and
        # so does a delete (it then hides the version instead of removing it).
        App.objects.filter(pk=app.pk, locked=False).update(locked=True)
        if not resubmit and not App.objects.filter(pk=app.pk, deleted_at__isnull=True).exists():
            raise SpecError([FieldError("appVersion", f"app {app} was deleted meanwhile")])
        job = _submit_document(
            user=user,
            project=prepared.project,
            document=prepared.document,
            hold=hold,
            extra={
                "uuid": prepared.job_uuid,
                "app_id": app.app_id,
                "app_version": app.version,
                "origin": prepared.origin,
                "file_inputs": prepared.inputs,
                "resubmitted_from": resubmitted_from,
            },
        )
        if prepared.subscribes:
            tapis_subscriptions_create(job=job, owner=user, subscribes=prepared.subscribes)
            tapis_subscription_event_publish(
                job=job, action="ADDED", count=len(prepared.subscribes)
            )
        job_stage_record(job=job, stage=Stage.PENDING, message=f"from app {app}")
    return job


def _submit_document(**kwargs) -> Job:
    try:
        return job_submit(**kwargs)
    except SpecError as exc:
        raise _tapis_paths(exc) from None


def job_resubmit(*, job: Job, user) -> Job:
    """A new job from the same app and arguments (macros substituted anew), or from the same
    document for other jobs; linked to the original by ``resubmitted_from``. The app version is
    the one the job ran, deleted since or not: a used version never changes."""
    if not job_sees_full(user, job):
        raise NotAllowed("only members of the job's project may resubmit it")
    if job.app_id and job.origin and "tapis" in job.origin:
        request = dict(job.origin["tapis"])
        request.setdefault("project", job.origin.get("project") or job.project.name)
        return tapis_job_submit(user=user, request=request, resubmitted_from=job)
    if job.openpai_config is not None or job.request.get("docker") is None:
        raise Conflict("this job came from an OpenPAI config: submit the config again")
    request = dict(job.request)
    secret = JobPullSecret.objects.filter(job=job).first()
    if secret is not None:  # the stored request holds the image with its password masked
        request["docker"] = {**request["docker"], "image": secret.image}
    document = {"name": job.name, "description": job.description, "request": request}
    with transaction.atomic():
        new = job_submit(
            user=user, project=job.project, document=document, extra={"resubmitted_from": job}
        )
    return new
