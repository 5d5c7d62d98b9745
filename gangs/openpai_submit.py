"""Submitting an OpenPAI job config (docs/openpai.md).

A config with exactly one task role of one task (and no retry) is one ordinary GPULab job (its
v2 request comes from ``gangs.openpai_config.expand_tasks``, with the PAI_* variables known at
submit). Any other config is a gang: one JobGang and each task an ordinary job named
``<jobName>-<role>-<index>``, all submitted with the checks of an array submission.

``jobs.user_actions.services.job_submit`` hands an OpenPAI document to ``openpai_submit`` (the
"openpai" document kind gangs registers, jobs/spec/document.py), which submits the v2 job(s) it
becomes through jobs' own services; the REST submit endpoint and the Create Job page both go
through it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db import transaction

from accounts.models import Project
from clusters.models import Cluster
from core.jsontext import check_storable
from gangs.create import gang_create
from gangs.models import JobGang
from gangs.openpai_config import expand_tasks, normalize_openpai, task_count
from gangs.policy import task_job_name
from jobs.models import Job
from jobs.spec import FieldError, RequestLimits, SpecError, load_json, normalize_job
from jobs.spec.checks import DEFAULT_LIMITS
from jobs.spec.images import redact_image
from jobs.states import JobStatus
from jobs.submit.checks import gang_impossible_reasons_for_requests, slave_capabilities
from jobs.user_actions.services import job_submit, job_submit_many, spec_defaults

# Keys a GPULab client adds to every submission and the API already read (the project):
# dropped before the OpenPAI validation, which knows no such key.
SUBMISSION_KEYS = ("owner",)


def openpai_config_check(
    *, user, document, allowed_registries=(), limits: RequestLimits = DEFAULT_LIMITS
) -> tuple[dict | None, list]:
    """``(canonical config or None, errors)`` after every check that needs no slave: the
    config's own rules (the site's ``limits`` included), and jobName unique among the user's
    jobs that are not deleted."""
    doc = document if isinstance(document, dict) else load_json(document)
    check_storable(doc)
    doc = {key: value for key, value in doc.items() if key not in SUBMISSION_KEYS}
    errors: list[FieldError] = []
    config = None
    try:
        config = normalize_openpai(doc, allowed_registries=allowed_registries, limits=limits)
    except SpecError as exc:
        errors.extend(exc.errors)
    name = doc.get("jobName")
    if isinstance(name, str) and name:
        clash = openpai_name_clash(user, name)
        if clash is not None:
            errors.append(
                FieldError(
                    "jobName",
                    f"must be unique among your jobs that are not deleted (job {clash[0]} "
                    f"is {clash[1]})",
                )
            )
    return config, errors


def openpai_name_clash(user, name: str) -> tuple | None:
    """``(uuid, status)`` of the user's job (or multi-task job) that already has this name and
    is not deleted; None when the name is free."""
    clash = (
        Job.objects.filter(owner=user, name=name)
        .exclude(status=JobStatus.DELETED)
        .values_list("uuid", "status")
        .first()
    )
    if clash is None:  # the name of a multi-task job whose tasks are not deleted
        clash = (
            JobGang.objects.filter(owner=user, name=name)
            .exclude(tasks__status=JobStatus.DELETED)
            .values_list("uuid", "status")
            .first()
        )
    return clash


def _cluster_id(config: dict) -> tuple[int | None, FieldError | None]:
    """virtualCluster -> a cluster id: by id ("3") or by name (the cluster's comment, any case);
    omitted -> None, the portal's default: any cluster the job fits on."""
    wanted = config["virtualCluster"]
    if wanted is None:
        return None, None
    if wanted.isdigit():
        if Cluster.objects.filter(id=int(wanted)).exists():
            return int(wanted), None
        return None, FieldError("virtualCluster", f"no cluster with id {wanted}")
    found = list(Cluster.objects.filter(comment__iexact=wanted).values_list("id", flat=True)[:2])
    if len(found) == 1:
        return found[0], None
    if found:
        return None, FieldError(
            "virtualCluster", f"several clusters are named {wanted!r}: use the id"
        )
    return None, FieldError("virtualCluster", f"no cluster named {wanted!r}")


@dataclass(frozen=True)
class OpenpaiTasks:
    """A checked OpenPAI config as the GPULab job(s) it becomes."""

    documents: list  # one v2 job document per task (what job_submit(_many) stores)
    tasks: list  # expand_tasks' tasks: role, index, ... in the same order
    stored: dict  # the config the job(s) keep (registry credentials redacted)
    config: dict  # the normalised config (to name its fields in later errors)

    @property
    def gang(self) -> bool:
        """Several tasks, or a retry policy: a gang (one task with retryCount is a gang of one)."""
        return len(self.tasks) != 1 or bool(self.config["retryCount"])


def openpai_tasks(*, user, document, defaults, project=None) -> OpenpaiTasks:
    """Validate an OpenPAI config and map each task to a v2 job document.

    Raises SpecError (400) listing every problem at once: the config's rules and the site's
    bounds, the name, the cluster, and (given the ``project``) a gang the registered slaves
    could never hold at once; all of them before any task is expanded.
    """
    config, errors = openpai_config_check(
        user=user,
        document=document,
        allowed_registries=defaults.allowed_private_registries,
        limits=defaults.limits,
    )
    if config is None:
        raise SpecError(errors)
    cluster_id, cluster_error = _cluster_id(config)
    if cluster_error is not None:
        errors.append(cluster_error)
    if errors:
        raise SpecError(errors)
    if project is not None and task_count(config) > 1:
        gang_errors = _gang_capacity_errors(
            config, user=user, project=project, cluster_id=cluster_id, defaults=defaults
        )
        if gang_errors:
            raise SpecError(gang_errors)
    tasks = expand_tasks(config, user_name=user.username, cluster_id=cluster_id)
    single = task_count(config) == 1 and not config["retryCount"]
    documents = [
        {
            # One task keeps the job's name; a gang's tasks are <jobName>-<role>-<index>.
            "name": config["jobName"]
            if single
            else task_job_name(config["jobName"], task["role"], task["index"]),
            "description": f"OpenPAI job {config['jobName']}, task role {task['role']}, "
            f"task {task['index']}",
            "request": task["request"],
        }
        for task in tasks
    ]
    stored = {**config, "image": redact_image(config["image"], member=True)}
    return OpenpaiTasks(documents=documents, tasks=tasks, stored=stored, config=config)


def _gang_capacity_errors(config: dict, *, user, project, cluster_id, defaults) -> list:
    """A gang starts whole: refuse one whose tasks the registered slaves could never hold at
    once. Checked on one task of each role (expanded alone), never on every task."""
    roles = config["taskRoles"]
    one_each = {**config, "taskRoles": [{**role, "taskNumber": 1} for role in roles]}
    requests = []
    for role, task in zip(
        roles, expand_tasks(one_each, user_name=user.username, cluster_id=cluster_id), strict=True
    ):
        try:
            document = normalize_job(
                {"name": config["jobName"], "request": task["request"]}, defaults=defaults
            )
        except SpecError:
            return []  # the task's own check names the problem, in the user's fields
        requests.append((document["request"], role["taskNumber"]))
    reasons = gang_impossible_reasons_for_requests(
        roles=requests, project=project, states=slave_capabilities().states
    )
    return [
        FieldError(
            "taskRoles" if position is None else f"taskRoles[{position}].taskNumber",
            f"the job's tasks start together and can never all fit: {why}",
        )
        for position, why in reasons
    ]


def openpai_spec_error(error: SpecError, mapped: OpenpaiTasks) -> SpecError:
    """The checks that need slaves (storage offered, resources satisfiable) speak of the GPULab
    request; name the OpenPAI fields the user wrote instead, each problem once
    (``tasks[3].request.resources.cpus`` of a gang -> ``taskRoles[1].cpuNumber``)."""
    config = mapped.config
    roles = {role["name"]: i for i, role in enumerate(config["taskRoles"])}
    found: list[FieldError] = []
    for e in error.errors:
        head, _, rest = e.path.partition(".")
        if head.startswith("tasks[") and head.endswith("]"):
            task = mapped.tasks[int(head[len("tasks[") : -1])]
            path = openpai_path(rest, config, role=roles[task["role"]])
        else:
            path = openpai_path(e.path, config)
        item = FieldError(path, e.message)
        if item not in found:
            found.append(item)
    return SpecError(found)


# GPULab request paths of a mapped single-task job -> the OpenPAI field they come from.
_ROLE_PATHS = {
    "request.resources.cpus": "cpuNumber",
    "request.resources.gpus": "gpuNumber",
    "request.resources.cpuMemoryGb": "memoryMB",
    "request.docker.command": "command",
    "request.docker.portMappings": "portList",
}
_JOB_PATHS = {
    "request.resources.gpuModel": "gpuType",
    "request.resources.clusterId": "virtualCluster",
    "request.docker.image": "image",
    "request.docker.environment": "jobEnvs",
}


def openpai_path(path: str, config: dict, *, role: int = 0) -> str:
    """The OpenPAI field behind a GPULab request path (``request.resources.cpus`` ->
    ``taskRoles[0].cpuNumber``); other paths are kept, prefixed so the user sees where they
    come from."""
    for prefix, field in _ROLE_PATHS.items():
        if path == prefix or path.startswith(prefix + ".") or path.startswith(prefix + "["):
            return f"taskRoles[{role}].{field}"
    for prefix, field in _JOB_PATHS.items():
        if path == prefix or path.startswith(prefix + ".") or path.startswith(prefix + "["):
            return field
    if path == "request.resources":  # "no registered slave can run this job": the role's needs
        return f"taskRoles[{role}]"
    if path.startswith("request.docker.storage["):
        named = [f for f in ("dataDir", "outputDir") if config[f] is not None]
        if named:
            return "/".join(named)
    if path.startswith("request."):
        return f"(as a GPULab job) {path}"
    return path


def openpai_submit(*, user, project: Project, document, hold: bool, now: datetime):
    """An OpenPAI config (docs/openpai.md): one task is submitted as a v2 job that keeps the
    config; several tasks (or a retry policy) as a gang whose tasks are submitted together,
    the answer being the first task. Errors name the OpenPAI fields. The caller
    (``job_submit``) checked the membership."""
    mapped = openpai_tasks(user=user, document=document, defaults=spec_defaults(), project=project)
    try:
        with transaction.atomic():  # the job(s) and the config, or nothing
            if not mapped.gang:
                (v2,) = mapped.documents
                job = job_submit(user=user, project=project, document=v2, hold=hold, now=now)
                job.openpai_config = mapped.stored
                job.save(update_fields=["openpai_config"])
                return job
            jobs = job_submit_many(
                user=user,
                project=project,
                documents=mapped.documents,
                hold=hold,
                now=now,
                name="tasks",
                sweep=False,  # the gang groups its tasks
            )
            gang_create(
                user=user,
                project=project,
                config=mapped.stored,
                tasks=mapped.tasks,
                jobs=jobs,
                now=now,
            )
            return jobs[0]
    except SpecError as exc:
        raise openpai_spec_error(exc, mapped) from None
