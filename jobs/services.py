"""User-facing job services: submit, cancel, halt, hold, release, delete.

Each takes keyword-only arguments, checks permission through the selectors, changes status only
through ``job_transition`` and fires background work on commit.
"""

from datetime import datetime

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from jobs.models import Job, JobEvent, JobPullSecret
from jobs.notifications import job_notify_request
from jobs.request_columns import columns_from_request
from jobs.selectors import job_can_act
from jobs.spec import FieldError, SpecDefaults, SpecError, parse_image, parse_job_document
from jobs.spec.document import is_openpai_document
from jobs.spec.images import redact_image
from jobs.states import FINISHED, HOLDS_RESOURCES, PENDING, JobStatus
from jobs.submit_checks import check_time_window
from jobs.ticks import tick_request
from jobs.transitions import job_event_add, job_transition
from portal.errors import Conflict, NotAllowed
from portal.models import Membership, Project
from portal.permissions import may_delete_all_jobs, may_submit_to_any_project
from portal.tasks import fire
from portal.timefmt import utc_z
from reservations.models import Reservation

S = JobStatus
STOP_TASK = "jobs.tasks.job_stop"
HALT_TASK = "jobs.tasks.job_halt"


def spec_defaults() -> SpecDefaults:
    return SpecDefaults(
        min_duration=settings.PORTAL_DEFAULT_MIN_DURATION,
        max_duration=settings.PORTAL_DEFAULT_MAX_DURATION,
        allowed_private_registries=tuple(settings.PORTAL_ALLOWED_PRIVATE_REGISTRIES),
    )


def _require_member(user, project: Project) -> None:
    if Membership.objects.filter(user=user, project=project).exists():
        return
    if not may_submit_to_any_project(user):
        raise NotAllowed(f"you are not a member of project {project.name}")


def _check_reservations(*, user, project: Project, reservation_ids: list[str]) -> None:
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
        elif user not in reservation.users.all() and project not in reservation.projects.all():
            errors.append(
                FieldError(path, f"you are not entitled to reservation {reservation.name!r}")
            )
    if errors:
        raise SpecError(errors)


def _job_checks(*, user, project: Project, request: dict) -> None:
    """Submit-time checks that need the registered slaves (storage policy, satisfiability)."""
    from jobs.submit_checks import check_request_against_slaves

    check_request_against_slaves(project=project, request=request, user=user.username)


def job_submit(
    *, user, project: Project, document, hold: bool = False, now: datetime | None = None
) -> Job:
    """Validate a v1 or v2 job document (or an OpenPAI config: jobs/openpai_submit.py) and store
    it as a QUEUED (or ONHOLD) job.

    Raises SpecError (400) for bad input, NotAllowed (403) for a project the user is not in.
    Nothing is written unless every check passes.
    """
    now = now or timezone.now()
    _require_member(user, project)
    if is_openpai_document(document):
        from jobs.openpai_submit import openpai_submit  # it calls back here with a v2 document

        return openpai_submit(user=user, project=project, document=document, hold=hold, now=now)
    canonical, was_v1 = parse_job_document(document, defaults=spec_defaults())
    request = canonical["request"]
    check_time_window(request=request, now=now)
    _check_reservations(
        user=user, project=project, reservation_ids=request["scheduling"]["reservationIds"]
    )
    _job_checks(user=user, project=project, request=request)

    full_image = request["docker"]["image"]
    image_ref = parse_image(full_image)
    if image_ref is not None and image_ref.has_credentials:
        request["docker"]["image"] = redact_image(full_image, member=True)

    status = S.ONHOLD if hold else S.QUEUED
    stamp = utc_z(now)
    with transaction.atomic():
        job = Job.objects.create(
            name=canonical["name"],
            description=canonical.get("description"),
            owner=user,
            project=project,
            deployment_environment=settings.PORTAL_DEPLOYMENT_ENVIRONMENT,
            request=request,
            status=status,
            status_updated=now,
            created=now,
            event_times={"created": stamp, "statusUpdated": stamp, status: stamp},
            **columns_from_request(request),
        )
        if image_ref is not None and image_ref.has_credentials:
            JobPullSecret.objects.create(job=job, image=full_image)
        message = "submitted" + (" (converted from a v1 jobDefinition)" if was_v1 else "")
        JobEvent.objects.create(
            job=job, time=now, type=JobEvent.Type.STATUS_CHANGE, new_state=status, message=message
        )
        if status == S.QUEUED:
            tick_request()
            job_notify_request(job=job, event=S.QUEUED)
    return job


def _require_actor(user, job: Job, *, delete: bool = False) -> None:
    if not job_can_act(user, job, delete=delete):
        raise NotAllowed("only members of the job's project may act on it")


def job_cancel(*, job: Job, user, reason: str = "", now: datetime | None = None) -> Job:
    """Cancel: a pending job ends at once; a job on a slave is stopped by a background task."""
    _require_actor(user, job)
    who = f"cancelled by {user.username}" + (f": {reason}" if reason else "")
    return job_cancel_by_system(job=job, reason=who, now=now)


def job_cancel_by_system(*, job: Job, reason: str, now: datetime | None = None) -> Job:
    """Cancel without a permission check (scheduler: maxDuration; admins' actions)."""
    if job.status in PENDING:
        if job_transition(
            job=job, to=S.CANCELLED, message=reason, fields={"end_reason": reason}, now=now
        ):
            tick_request()
        return job
    if job.status in HOLDS_RESOURCES and job.status != S.CANCELLING:
        with transaction.atomic():
            if job_transition(
                job=job, to=S.CANCELLING, message=reason, fields={"end_reason": reason}, now=now
            ):
                fire(STOP_TASK, job.pk)
        return job
    if job.status == S.CANCELLING:
        return job
    raise Conflict(f"a job in state {job.status} cannot be cancelled")


def job_halt_request(*, job: Job, user, now: datetime | None = None) -> Job:
    """A user asks their running job to halt (GPULab: "User requested fallback manually")."""
    _require_actor(user, job)
    member = Membership.objects.filter(user=user, project_id=job.project_id).exists()
    reason = "User requested fallback manually" if member else "Admin requested fallback"
    return job_halt_by_system(job=job, halt_info={"reason": reason}, now=now)


def job_halt_by_system(*, job: Job, halt_info: dict, now: datetime | None = None) -> Job:
    """RUNNING -> MUSTHALT and fire the halt procedure (SIGUSR1, wait for exit 123)."""
    now = now or timezone.now()
    if job.status != S.RUNNING:
        raise Conflict(f"only a RUNNING job can be halted; this one is {job.status}")
    info = {
        "reason": "Unknown",
        "time": utc_z(now),
        "startedJobUuids": [],
        "haltedJobUuids": [str(job.uuid)],
        "slaveName": job.slave.name if job.slave_id else None,
        "slaveInstance": job.slave.instance_id if job.slave_id else None,
        "startedJobScores": [],
        "haltedJobScores": [],
        **halt_info,
    }
    with transaction.atomic():
        if job_transition(
            job=job,
            to=S.MUSTHALT,
            message=f"halt requested: {info['reason']}",
            fields={"halt_events": [*job.halt_events, info]},
            now=now,
        ):
            fire(HALT_TASK, job.pk)
    return job


def job_hold(*, job: Job, user, now: datetime | None = None) -> Job:
    _require_actor(user, job)
    if job.status != S.QUEUED:
        raise Conflict(f"only a QUEUED job can be put on hold; this one is {job.status}")
    job_transition(job=job, to=S.ONHOLD, message=f"put on hold by {user.username}", now=now)
    return job


def job_release(*, job: Job, user, now: datetime | None = None) -> Job:
    _require_actor(user, job)
    if job.status != S.ONHOLD:
        raise Conflict(f"only an ONHOLD job can be released; this one is {job.status}")
    with transaction.atomic():
        if job_transition(job=job, to=S.QUEUED, message=f"released by {user.username}", now=now):
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
    if job.status == S.DELETED:
        return job
    job_transition(job=job, to=S.DELETED, message=f"deleted by {user.username}", now=now)
    return job


__all__ = [
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
