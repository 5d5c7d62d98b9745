"""Submitting an OpenPAI job config (docs/openpai.md).

A config with exactly one task role of one task (and no retry) is one ordinary GPULab job (its
v2 request comes from ``jobs.spec.openpai.expand_tasks``, with the PAI_* variables known at
submit). Any other config is a gang (jobs/gang.py): one JobGang and each task an ordinary job
named ``<jobName>-<role>-<index>``, all submitted with the checks of an array submission.

``job_submit`` hands OpenPAI documents here; the REST submit endpoint and the Create Job page
both go through it.
"""

from __future__ import annotations

from datetime import datetime

from django.db import transaction
from django.utils import timezone

from clusters.models import Cluster
from jobs.gang import task_job_name
from jobs.models import Job, JobGang
from jobs.spec import FieldError, SpecError, load_json
from jobs.spec.images import redact_image
from jobs.spec.jsontext import check_storable
from jobs.spec.openpai import expand_tasks, normalize_openpai, task_count
from jobs.states import JobStatus

# Keys a GPULab client adds to every submission and the API already read (the project):
# dropped before the OpenPAI validation, which knows no such key.
SUBMISSION_KEYS = ("owner",)
NOT_YET = "is not supported for single-task jobs yet (it needs the OpenPAI runtime)"


def openpai_config_check(*, user, document, allowed_registries=()) -> tuple[dict | None, list]:
    """``(canonical config or None, errors)`` after every check that needs no slave: the
    config's own rules, and jobName unique among the user's jobs that are not deleted."""
    doc = document if isinstance(document, dict) else load_json(document)
    check_storable(doc)
    doc = {key: value for key, value in doc.items() if key not in SUBMISSION_KEYS}
    errors: list[FieldError] = []
    config = None
    try:
        config = normalize_openpai(doc, allowed_registries=allowed_registries)
    except SpecError as exc:
        errors.extend(exc.errors)
    name = doc.get("jobName")
    if isinstance(name, str) and name:
        clash = (
            Job.objects.filter(owner=user, name=name)
            .exclude(status=JobStatus.DELETED)
            .values_list("uuid", "status")
            .first()
        )
        if clash is None:
            gang = (
                JobGang.objects.filter(owner=user, name=name)
                .exclude(status=JobStatus.DELETED)
                .exclude(tasks__status=JobStatus.DELETED)
                .values_list("uuid", "status")
                .first()
            )
            clash = gang
        if clash is not None:
            errors.append(
                FieldError(
                    "jobName",
                    f"must be unique among your jobs that are not deleted (job {clash[0]} "
                    f"is {clash[1]})",
                )
            )
    return config, errors


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


def _single_task_limits(config: dict) -> list[FieldError]:
    """What the runtime cannot honour yet: each is refused rather than silently ignored."""
    errors = []
    if config["authFile"] is not None:
        errors.append(FieldError("authFile", NOT_YET + ": it is read at launch"))
    if config["jobEnvs"].get("isDebug"):
        errors.append(FieldError("jobEnvs.isDebug", NOT_YET + ": it keeps a failed container"))
    return errors


def openpai_submit(
    *, user, project, document, hold: bool = False, now: datetime | None = None
) -> Job:
    """Validate an OpenPAI config; submit a one-role, one-task config as an ordinary job.

    Raises SpecError (400) listing every problem; a valid multi-task config gets the refusal
    ``openpai: multi-task jobs are accepted for validation but cannot be run yet``.
    """
    from jobs.services import job_submit, spec_defaults

    defaults = spec_defaults()
    config, errors = openpai_config_check(
        user=user, document=document, allowed_registries=defaults.allowed_private_registries
    )
    if config is None:
        raise SpecError(errors)
    # Every problem at once: the name, what the runtime cannot do yet, the cluster.
    errors.extend(_single_task_limits(config))
    cluster_id, cluster_error = _cluster_id(config)
    if cluster_error is not None:
        errors.append(cluster_error)
    if errors:
        raise SpecError(errors)
    if task_count(config) != 1 or config["retryCount"]:
        # Several tasks, or a retry policy: a gang (one task with retryCount is a gang of one).
        return _gang_submit(
            user=user, project=project, config=config, cluster_id=cluster_id, hold=hold, now=now
        )
    (task,) = expand_tasks(config, user_name=user.username, cluster_id=cluster_id)
    role = config["taskRoles"][0]["name"]
    v2 = {
        "name": config["jobName"],
        "description": f"OpenPAI job {config['jobName']}, task role {role}, task 0",
        "request": task["request"],
    }
    stored = {**config, "image": redact_image(config["image"], member=True)}
    try:
        with transaction.atomic():  # the job and its config, or nothing
            job = job_submit(user=user, project=project, document=v2, hold=hold, now=now)
            job.openpai_config = stored
            job.save(update_fields=["openpai_config"])
        return job
    except SpecError as exc:
        # The checks that need slaves (storage offered, resources satisfiable) speak of the
        # GPULab request; name the OpenPAI fields the user wrote instead.
        raise SpecError(
            FieldError(openpai_path(error.path, config), error.message) for error in exc.errors
        ) from None


def _gang_submit(*, user, project, config: dict, cluster_id, hold: bool, now) -> Job:
    """Store the gang and its tasks (all checked as one array submission) or nothing; answer
    the first task (the API's job; the others are listed by the gang)."""
    from jobs.services import job_submit_many

    tasks = expand_tasks(config, user_name=user.username, cluster_id=cluster_id)
    documents = [
        {
            "name": task_job_name(config["jobName"], task["role"], task["index"]),
            "description": f"OpenPAI job {config['jobName']}, task role {task['role']}, "
            f"task {task['index']}",
            "request": task["request"],
        }
        for task in tasks
    ]
    role_index = {role["name"]: i for i, role in enumerate(config["taskRoles"])}
    stored = {**config, "image": redact_image(config["image"], member=True)}
    try:
        with transaction.atomic():
            jobs = job_submit_many(
                user=user, project=project, documents=documents, hold=hold, now=now, name="tasks"
            )
            gang = JobGang.objects.create(
                name=config["jobName"],
                owner=user,
                project=project,
                config=stored,
                task_requests=[
                    {
                        "role": task["role"],
                        "index": task["index"],
                        "name": job.name,
                        "description": job.description,
                        "request": job.request,
                    }
                    for task, job in zip(tasks, jobs, strict=True)
                ],
                retry_count=config["retryCount"],
                status=JobStatus.QUEUED,
                created=now or timezone.now(),
                status_updated=now or timezone.now(),
            )
            for task, job in zip(tasks, jobs, strict=True):
                job.gang, job.task_role, job.task_index, job.gang_attempt = (
                    gang, task["role"], task["index"], 1
                )  # fmt: skip
                job.openpai_config = stored
            Job.objects.bulk_update(
                jobs, ["gang", "task_role", "task_index", "gang_attempt", "openpai_config"]
            )
        return jobs[0]
    except SpecError as exc:
        # "tasks[3].request.resources.cpus" -> "taskRoles[1].cpuNumber", each problem once.
        found: list[FieldError] = []
        for error in exc.errors:
            head, _, rest = error.path.partition(".")
            index = int(head[len("tasks[") : -1]) if head.startswith("tasks[") else None
            if index is None:
                mapped = FieldError(error.path, error.message)
            else:
                role = role_index[tasks[index]["role"]]
                mapped = FieldError(openpai_path(rest, config, role=role), error.message)
            if mapped not in found:
                found.append(mapped)
        raise SpecError(found) from None


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
