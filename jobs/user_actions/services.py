"""User-facing job services: submit, cancel, halt, hold, release, delete.

Each takes keyword-only arguments, checks permission through the selectors, changes status only
through ``job_transition`` and fires background work on commit.
"""

from copy import deepcopy
from dataclasses import dataclass
from datetime import datetime
from uuid import uuid4

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from accounts.models import Membership, Project
from accounts.permissions import may_delete_all_jobs, may_submit_to_any_project
from core.errors import DOCUMENT_PATH, JSON_PATH, Conflict, NotAllowed
from core.tasks import fire
from core.timefmt import utc_z
from jobs import task_names
from jobs.models import Job, JobEvent, JobPullSecret
from jobs.selectors import job_can_act, project_ids_of
from jobs.signals import job_status_changed, signal_send_after_commit
from jobs.spec import (
    FieldError,
    RequestLimits,
    SpecDefaults,
    SpecError,
    parse_image,
    parse_job_document,
)
from jobs.spec.document import document_kind_of
from jobs.spec.images import redact_image
from jobs.spec.v2 import columns_from_request
from jobs.states import FINISHED, HOLDS_RESOURCES, PENDING, JobStatus
from jobs.submit.checks import check_request_against_slaves, check_time_window, registered_slaves
from jobs.system_actions import job_cancel_by_system, job_halt_by_system
from jobs.transitions import job_event_add, job_transition
from jobs.wakeups import tick_request
from reservations.models import Reservation


def spec_defaults() -> SpecDefaults:
    return SpecDefaults(
        min_duration=settings.PORTAL_DEFAULT_MIN_DURATION,
        max_duration=settings.PORTAL_DEFAULT_MAX_DURATION,
        allowed_private_registries=tuple(settings.PORTAL_ALLOWED_PRIVATE_REGISTRIES),
        webhook_allowed_hosts=tuple(settings.PORTAL_WEBHOOK_ALLOWED_HOSTS),
        limits=RequestLimits(
            ports_per_job=settings.PORTAL_MAX_PORTS_PER_JOB,
            ports_per_gang=settings.PORTAL_MAX_PORTS_PER_GANG,
            gang_tasks=settings.PORTAL_MAX_GANG_TASKS,
            command_chars=settings.PORTAL_MAX_COMMAND_CHARS,
            command_words=settings.PORTAL_MAX_COMMAND_WORDS,
            email_recipients=settings.PORTAL_MAX_EMAIL_RECIPIENTS,
        ),
    )


def _require_member(user, project: Project) -> None:
    if project.pk in project_ids_of(user):
        return
    if not may_submit_to_any_project(user):
        raise NotAllowed(f"you are not a member of project {project.name}")


def _check_reservations(*, user, project: Project, reservation_ids: list[str]) -> None:
    """Every named reservation exists and admits the job (Reservation.entitles: listed by user
    or project, or a reservation that lists nobody)."""
    if not reservation_ids:
        return
    found = {
        str(r.uuid): r
        for r in Reservation.objects.filter(uuid__in=reservation_ids).prefetch_related(
            "users", "projects"
        )
    }
    errors = []
    for index, rid in enumerate(reservation_ids):
        path = f"request.scheduling.reservationIds[{index}]"
        reservation = found.get(rid)
        if reservation is None:
            errors.append(FieldError(path, f"no reservation with id {rid}"))
        elif not reservation.entitles(user=user.username, project=project.name):
            errors.append(
                FieldError(path, f"you are not entitled to reservation {reservation.name!r}")
            )
    if errors:
        raise SpecError(errors)


def _job_checks(*, user, project: Project, request: dict, registered=None) -> None:
    """Submit-time checks that need the registered slaves (storage policy, satisfiability)."""
    check_request_against_slaves(
        project=project, request=request, user=user.username, registered=registered
    )


@dataclass
class _Prepared:
    """One checked job document, ready to be written."""

    canonical: dict
    was_v1: bool
    pull_image: str | None  # the image with its registry credentials, when it has some


def _job_prepare(*, user, project: Project, document, registered, now: datetime) -> _Prepared:
    """Every per-job rule of a submission, once for single and array submits: parse and
    validate the document, check reservations and the registered slaves, redact credentials.
    Raises SpecError listing every problem of this document."""
    canonical, was_v1 = parse_job_document(document, defaults=spec_defaults())
    request = canonical["request"]
    check_time_window(request=request, now=now)
    _check_reservations(
        user=user, project=project, reservation_ids=request["scheduling"]["reservationIds"]
    )
    _job_checks(user=user, project=project, request=request, registered=registered)
    full_image = request["docker"]["image"]
    image_ref = parse_image(full_image)
    pull_image = None
    if image_ref is not None and image_ref.has_credentials:
        request["docker"]["image"] = redact_image(full_image, member=True)
        pull_image = full_image
    return _Prepared(canonical=canonical, was_v1=was_v1, pull_image=pull_image)


def _item_error(name: str, index: int, error: FieldError) -> FieldError:
    """``jobs[3].request.resources.gpus`` from item 3's ``request.resources.gpus``."""
    item = f"{name}[{index}]"
    if error.path in (DOCUMENT_PATH, JSON_PATH):
        return FieldError(item, error.message)
    return FieldError(f"{item}.{error.path}", error.message)


def job_submit(
    *,
    user,
    project: Project,
    document,
    hold: bool = False,
    now: datetime | None = None,
    extra: dict | None = None,
) -> Job:
    """Validate a v1 or v2 job document and store it as a QUEUED (or ONHOLD) job; a document
    of a kind an app registered (jobs/spec/document.py: an OpenPAI config, gangs/) is submitted by
    that app, which answers its first job.

    ``extra``: Job columns the caller sets beside the document (a Tapis app's origin, staged
    file inputs, the resubmit link, a uuid chosen ahead for macros); never status or request.

    Raises SpecError (400) for bad input, NotAllowed (403) for a project the user is not in.
    Nothing is written unless every check passes.
    """
    now = now or timezone.now()
    _require_member(user, project)
    kind = document_kind_of(document)
    if kind is not None:
        return kind.submit(user=user, project=project, document=document, hold=hold, now=now)
    prepared = _job_prepare(
        user=user, project=project, document=document, registered=registered_slaves(), now=now
    )
    return _jobs_create(
        user=user, project=project, items=[prepared], hold=hold, now=now, extra=extra
    )[0]


def job_submit_many(
    *,
    user,
    project: Project,
    documents: list,
    hold: bool = False,
    now: datetime | None = None,
    name: str = "jobs",
    sweep: bool = True,
) -> list[Job]:
    """An array submission: validate every document as ``job_submit`` does and store them all
    in one transaction, or none. ``sweep``: the jobs share an ``array_id`` (the jobs list shows
    them as one sweep); a gang's tasks do not, the gang groups them (``gang_id``).

    Raises SpecError with one error per problem, each naming the item (``jobs[3].request...``;
    ``name`` is the list the caller's input calls them, ``variations`` for a sweep).
    """
    now = now or timezone.now()
    _require_member(user, project)
    registered = registered_slaves()
    items, errors = [], []
    for index, document in enumerate(documents):
        if not isinstance(document, dict):  # never parsed as JSON text inside an array
            errors.append(FieldError(f"{name}[{index}]", "must be a job document (an object)"))
            continue
        try:
            items.append(
                _job_prepare(
                    user=user, project=project, document=document, registered=registered, now=now
                )
            )
        except SpecError as exc:
            errors.extend(_item_error(name, index, error) for error in exc.errors)
    if errors:
        raise SpecError(errors)
    # One id for the whole array: the jobs list groups its jobs and acts on them together.
    extra = {"array_id": uuid4()} if sweep else None
    return _jobs_create(user=user, project=project, items=items, hold=hold, now=now, extra=extra)


def _jobs_create(
    *,
    user,
    project: Project,
    items: list[_Prepared],
    hold: bool,
    now: datetime,
    extra: dict | None = None,
) -> list[Job]:
    """Write checked jobs with their first event in one transaction, then ask for one tick.

    One job or many, the rows go through ``bulk_create`` (a few INSERT statements, the ids
    read back with them on PostgreSQL and SQLite): the rows Django's ``save`` writes
    (tests/jobs/test_submit_array.py compares them column by column)."""
    status = JobStatus.ONHOLD if hold else JobStatus.QUEUED
    stamp = utc_z(now)
    shared = {
        "owner": user,
        "project": project,
        "deployment_environment": settings.PORTAL_DEPLOYMENT_ENVIRONMENT,
        "status": status,
        "status_updated": now,
        "created": now,
        "event_times": {"created": stamp, "statusUpdated": stamp, status: stamp},
        **(extra or {}),
    }
    # A caller may name the uuid (a Tapis job keeps the uuid it answered with): one job, one
    # uuid. Otherwise each job gets the field's default.
    if shared.get("uuid") is None:
        shared.pop("uuid", None)
    elif len(items) != 1:
        raise ValueError("a chosen uuid names exactly one job")
    jobs = [
        Job(
            # Each job its own copy of a shared JSON value: a caller changing one job's
            # event_times must not change another's.
            **{k: deepcopy(v) if isinstance(v, dict | list) else v for k, v in shared.items()},
            name=item.canonical["name"],
            description=item.canonical.get("description"),
            request=item.canonical["request"],
            **columns_from_request(item.canonical["request"]),
        )
        for item in items
    ]
    messages = [
        "submitted" + (" (converted from a v1 jobDefinition)" if item.was_v1 else "")
        for item in items
    ]
    with transaction.atomic():
        Job.objects.bulk_create(jobs)
        JobPullSecret.objects.bulk_create(
            JobPullSecret(job=job, image=item.pull_image)
            for job, item in zip(jobs, items, strict=True)
            if item.pull_image
        )
        JobEvent.objects.bulk_create(
            JobEvent(
                job=job,
                time=now,
                type=JobEvent.Type.STATUS_CHANGE,
                new_state=status,
                message=message,
            )
            for job, message in zip(jobs, messages, strict=True)
        )
        if status == JobStatus.QUEUED:
            tick_request()
            # Told once committed (notifications: emailOnQueue, subscriptions to QUEUED).
            signal_send_after_commit(
                job_status_changed,
                sender=Job,
                calls=[{"job": job, "status": JobStatus.QUEUED} for job in jobs],
            )
    return jobs


def _require_actor(user, job: Job, *, delete: bool = False) -> None:
    if not job_can_act(user, job, delete=delete):
        raise NotAllowed("only members of the job's project may act on it")


def cancelled_by(user, reason: str = "") -> str:
    """What a user's cancel says (the job's end reason and event): ``cancelled by alice: ...``."""
    return f"cancelled by {user.username}" + (f": {reason}" if reason else "")


def job_cancel(*, job: Job, user, reason: str = "", now: datetime | None = None) -> Job:
    """Cancel: a pending job ends at once; a job on a slave is stopped by a background task.

    This job alone: the user actions of jobs/user_actions/registry.py act on a whole gang instead
    when the job is one of its tasks."""
    _require_actor(user, job)
    return job_cancel_by_system(job=job, reason=cancelled_by(user, reason), now=now)


def job_halt_request(*, job: Job, user, now: datetime | None = None) -> Job:
    """A user asks their running job to halt (GPULab: "User requested fallback manually")."""
    _require_actor(user, job)
    member = Membership.objects.filter(user=user, project_id=job.project_id).exists()
    reason = "User requested fallback manually" if member else "Admin requested fallback"
    return job_halt_by_system(job=job, halt_info={"reason": reason}, now=now)


def job_hold(*, job: Job, user, now: datetime | None = None) -> Job:
    _require_actor(user, job)
    if job.status != JobStatus.QUEUED:
        raise Conflict(f"only a QUEUED job can be put on hold; this one is {job.status}")
    job_transition(job=job, to=JobStatus.ONHOLD, message=f"put on hold by {user.username}", now=now)
    return job


def job_release(*, job: Job, user, now: datetime | None = None) -> Job:
    _require_actor(user, job)
    if job.status != JobStatus.ONHOLD:
        raise Conflict(f"only an ONHOLD job can be released; this one is {job.status}")
    with transaction.atomic():
        if job_transition(
            job=job, to=JobStatus.QUEUED, message=f"released by {user.username}", now=now
        ):
            tick_request()
    return job


def job_delete(
    *,
    job: Job,
    user,
    finished: bool = False,
    real: bool = False,
    force: bool = False,
    now: datetime | None = None,
) -> Job | None:
    """GPULab's ``DELETE jobs/<id>`` (``gpulab-cli rm``), as the client's help describes it.

    Without flags it revokes a job that has not run yet: the job is cancelled and hidden
    (DELETED). ``finished`` also allows hiding a job that has ended. ``real`` (admins) removes
    the row instead of hiding it, an ended job included; ``force`` (admins,
    with ``real``) does so whatever the state, ending a running job first. Returns None when the row was removed.
    """
    _require_actor(user, job, delete=True)
    if (real or force) and not may_delete_all_jobs(user):
        raise NotAllowed("'real' and 'force' deletion are for admins only")
    if job.status in HOLDS_RESOURCES:
        if force and real:
            # gpulab-cli rm --real --force: one call cancels and removes. The stop task finds
            # no row once it runs, so the reconcile pass removes the container as an unknown
            # one of this installation (the same path a lost stop takes).
            job_cancel_by_system(job=job, reason=f"force-deleted by {user.username}", now=now)
            job.delete()
            fire(task_names.RECONCILE)
            return None
        if force:
            job_cancel_by_system(job=job, reason=f"force-deleted by {user.username}", now=now)
            raise Conflict(
                f"the job was {job.status} and is being cancelled: remove it again once it ended"
            )
        raise Conflict(f"the job is {job.status} on a slave: cancel it first (gpulab-cli cancel)")
    if job.status in FINISHED and not (finished or real or force):
        raise Conflict(
            f"the job has already ended ({job.status}): pass finished=true "
            "(gpulab-cli rm --finished) to remove it"
        )
    if job.status in PENDING:
        job_cancel_by_system(job=job, reason=f"revoked by {user.username}", now=now)
        job.refresh_from_db()
    if real:
        job.delete()
        return None
    if job.status == JobStatus.DELETED:
        return job
    job_transition(job=job, to=JobStatus.DELETED, message=f"deleted by {user.username}", now=now)
    return job


__all__ = [
    "cancelled_by",
    "job_cancel",
    "job_cancel_by_system",
    "job_delete",
    "job_event_add",
    "job_halt_by_system",
    "job_halt_request",
    "job_hold",
    "job_release",
    "job_submit",
    "spec_defaults",
]
