"""Rows for page tests, written directly (the services are tested elsewhere)."""

import copy
from datetime import timedelta

from django.utils import timezone

from core.timefmt import utc_z
from jobs.models import Job, JobEvent, JobExplanation
from jobs.spec import normalize_job
from jobs.spec.v2 import columns_from_request
from jobs.states import HOLDS_RESOURCES, TERMINAL
from jobs.user_actions.services import spec_defaults

BASE_DOCUMENT = {
    "name": "train-model",
    "description": "a test job",
    "request": {
        "resources": {"gpus": 1, "cpus": 2, "cpuMemoryGb": 4},
        "docker": {"image": "debian:stable", "command": "echo hi"},
        "scheduling": {},
    },
}


_CANONICAL = []


def _canonical() -> dict:
    """The base document, validated once (validation is the slow part of making many jobs)."""
    if not _CANONICAL:
        _CANONICAL.append(normalize_job(BASE_DOCUMENT, defaults=spec_defaults()))
    return copy.deepcopy(_CANONICAL[0])


def make_job(
    *,
    owner,
    project,
    status="QUEUED",
    slave=None,
    gpu_ids=None,
    name="train-model",
    image="debian:stable",
    gpus=1,
    created=None,
    started=None,
    ended=None,
    port_mappings=None,
    explanations=None,
    **extra,
):
    now = timezone.now()
    canonical = _canonical()
    request = canonical["request"]
    request["docker"]["image"] = image
    request["resources"]["gpus"] = gpus
    created = created or now - timedelta(minutes=10)
    on_slave = status in HOLDS_RESOURCES or (status in TERMINAL and slave is not None)
    if on_slave and started is None and status != "ASSIGNED":
        started = created + timedelta(minutes=1)
    if status in TERMINAL and started is not None and ended is None:
        ended = started + timedelta(minutes=5)
    event_times = {"created": utc_z(created), status: utc_z(now)}
    if started:
        event_times["STARTING"] = utc_z(started)
    job = Job.objects.create(
        name=name,
        description=canonical["description"],
        owner=owner,
        project=project,
        request=request,
        status=status,
        status_updated=ended or now,
        created=created,
        event_times=event_times,
        slave=slave if on_slave or status == "ASSIGNED" else None,
        gpu_ids=list(gpu_ids if gpu_ids is not None else (range(gpus) if slave else [])),
        cpu_ids=[0, 1] if slave else [],
        started_at=started,
        ended_at=ended,
        port_mappings=port_mappings or [],
        **{**columns_from_request(request), **extra},
    )
    if explanations:
        JobExplanation.objects.create(job=job, lines=explanations)
    JobEvent.objects.create(
        job=job,
        time=created,
        type=JobEvent.Type.STATUS_CHANGE,
        new_state="QUEUED",
        message=f"submitted by {owner.username}",
    )
    if status != "QUEUED":
        JobEvent.objects.create(
            job=job,
            time=now,
            type=JobEvent.Type.STATUS_CHANGE,
            new_state=status,
            message=f"{status.lower()} ({owner.username})",
        )
    return job
