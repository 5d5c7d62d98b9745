"""Submitting an OpenPAI job config (docs/openpai.md).

What runs today: a config with exactly one task role of one task is one ordinary GPULab job (its
v2 request comes from ``jobs.spec.openpai.expand_tasks``, with the PAI_* variables known at
submit). Any other valid config is answered with a precise refusal: the multi-task runtime (gang
start, completion and retry policies) is not built yet.

``jobs.actions.services.job_submit`` maps an OpenPAI document here and submits the v2 job it
becomes; the REST submit endpoint and the Create Job page both go through it.
"""

from __future__ import annotations

from dataclasses import dataclass

from clusters.models import Cluster
from jobs.models import Job
from jobs.spec import FieldError, SpecError, load_json
from jobs.spec.images import redact_image
from jobs.spec.jsontext import check_storable
from jobs.spec.openpai import expand_tasks, normalize_openpai, task_count
from jobs.states import JobStatus

MULTI_TASK_REFUSAL = (
    "multi-task jobs are accepted for validation but cannot be run yet (see docs/openpai.md)"
)
REFUSAL_PATH = "openpai"
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
    """What a single-task job cannot honour yet: each is refused rather than silently ignored."""
    errors = []
    if config["authFile"] is not None:
        errors.append(FieldError("authFile", NOT_YET + ": it is read at launch"))
    if config["codeDir"] is not None:
        errors.append(FieldError("codeDir", NOT_YET + ": it is mounted read-only"))
    if config["retryCount"]:
        errors.append(FieldError("retryCount", NOT_YET + "; use 0"))
    if config["jobEnvs"].get("isDebug"):
        errors.append(FieldError("jobEnvs.isDebug", NOT_YET + ": it keeps a failed container"))
    return errors


@dataclass(frozen=True)
class OpenpaiTask:
    """A checked one-task OpenPAI config as the GPULab job it becomes."""

    v2: dict  # the job document ``job_submit`` stores
    stored: dict  # the config the job keeps (registry credentials redacted)
    config: dict  # the normalised config (to name its fields in later errors)


def openpai_single_task(*, user, document, defaults) -> OpenpaiTask:
    """Validate an OpenPAI config and map its one task to a v2 job document.

    Raises SpecError (400) listing every problem; a valid multi-task config gets the refusal
    ``openpai: multi-task jobs are accepted for validation but cannot be run yet``.
    """
    config, errors = openpai_config_check(
        user=user, document=document, allowed_registries=defaults.allowed_private_registries
    )
    if config is None:
        raise SpecError(errors)
    if task_count(config) != 1:  # one task: exactly one role, of taskNumber 1
        raise SpecError([*errors, FieldError(REFUSAL_PATH, MULTI_TASK_REFUSAL)])
    # Every problem at once: the name, what a single task cannot do yet, the cluster.
    errors.extend(_single_task_limits(config))
    cluster_id, cluster_error = _cluster_id(config)
    if cluster_error is not None:
        errors.append(cluster_error)
    if errors:
        raise SpecError(errors)
    (task,) = expand_tasks(config, user_name=user.username, cluster_id=cluster_id)
    role = config["taskRoles"][0]["name"]
    v2 = {
        "name": config["jobName"],
        "description": f"OpenPAI job {config['jobName']}, task role {role}, task 0",
        "request": task["request"],
    }
    stored = {**config, "image": redact_image(config["image"], member=True)}
    return OpenpaiTask(v2=v2, stored=stored, config=config)


def openpai_spec_error(error: SpecError, config: dict) -> SpecError:
    """The checks that need slaves (storage offered, resources satisfiable) speak of the GPULab
    request; name the OpenPAI fields the user wrote instead."""
    return SpecError(FieldError(openpai_path(e.path, config), e.message) for e in error.errors)


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


def openpai_path(path: str, config: dict) -> str:
    """The OpenPAI field behind a GPULab request path (``request.resources.cpus`` ->
    ``taskRoles[0].cpuNumber``); other paths are kept, prefixed so the user sees where they
    come from."""
    for prefix, field in _ROLE_PATHS.items():
        if path == prefix or path.startswith(prefix + ".") or path.startswith(prefix + "["):
            return f"taskRoles[0].{field}"
    for prefix, field in _JOB_PATHS.items():
        if path == prefix or path.startswith(prefix + ".") or path.startswith(prefix + "["):
            return field
    if path == "request.resources":  # "no registered slave can run this job": the role's needs
        return "taskRoles[0]"
    if path.startswith("request.docker.storage["):
        named = [f for f in ("dataDir", "outputDir") if config[f] is not None]
        if named:
            return "/".join(named)
    if path.startswith("request."):
        return f"(as a GPULab job) {path}"
    return path
