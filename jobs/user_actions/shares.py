"""Sharing a job read-only with a user or a project.

The grantee sees the job in full (request, history, log, outputs: ``jobs.selectors.
job_sees_full`` is the one read rule every page, API and download asks) and cannot act on it
(``job_can_act`` ignores shares). The job's owner shares and revokes (holders of the "act on
all jobs" power too); the job's project members and admins list the shares. Each share and
revoke is an Info event in the job's history.

``share_refusal`` is the rule for any owned thing (an App shares the same way): it takes the
owner and the grantees, not a job.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts.models import Project
from accounts.permissions import may_act_on_all_jobs, may_view_all_jobs
from core.errors import Conflict, NotAllowed, ServiceError
from core.timefmt import utc_z
from jobs.models import Job, JobShare
from jobs.selectors import project_ids_of
from jobs.transitions import job_event_add


def share_refusal(*, owner, user, grantee_user=None, grantee_project=None) -> str | None:
    """Why ``user`` may not share a thing owned by ``owner`` with these grantees, or None.

    Exactly one grantee; only the owner (or a holder of ``admin_power``, checked by the
    caller) shares; sharing with the owner is pointless and refused."""
    if (grantee_user is None) == (grantee_project is None):
        return "name exactly one grantee: a user or a project"
    if user is None or not user.is_authenticated or user.pk != owner.pk:
        return "only the owner shares it"
    if grantee_user is not None and grantee_user.pk == owner.pk:
        return "the owner sees it already"
    return None


def _grantee_name(share: JobShare) -> str:
    if share.grantee_user is not None:
        return f"user {share.grantee_user.username}"
    assert share.grantee_project is not None  # a share has a user or a project
    return f"project {share.grantee_project.name}"


def job_share_create(
    *, job: Job, user, grantee_user=None, grantee_project: Project | None = None
) -> JobShare:
    """Share ``job`` read-only with one user or one project (409 when already shared)."""
    why = share_refusal(
        owner=job.owner, user=user, grantee_user=grantee_user, grantee_project=grantee_project
    )
    if why == "only the owner shares it" and may_act_on_all_jobs(user):
        why = None
    if why is not None:
        error = NotAllowed if why.startswith("only") else ServiceError
        raise error(why)
    try:
        with transaction.atomic():
            share = JobShare.objects.create(
                job=job,
                grantee_user=grantee_user,
                grantee_project=grantee_project,
                created_by=user,
                created=timezone.now(),
            )
            job_event_add(
                job=job, message=f"shared read-only with {_grantee_name(share)} by {user.username}"
            )
    except IntegrityError:
        raise Conflict("the job is already shared with this grantee") from None
    return share


def job_share_revoke(*, share: JobShare, user) -> None:
    """Remove a share: the grantee loses the full view at once."""
    job = share.job
    if not (user.is_authenticated and (user.pk == job.owner_id or may_act_on_all_jobs(user))):
        raise NotAllowed("only the job's owner revokes its shares")
    with transaction.atomic():
        name = _grantee_name(share)
        share.delete()
        job_event_add(job=job, message=f"share with {name} revoked by {user.username}")


def job_shares_list(*, job: Job, user) -> list[JobShare]:
    """The job's shares, for its project's members and admins."""
    if not (job.project_id in project_ids_of(user) or may_view_all_jobs(user)):
        raise NotAllowed("only the job's project sees who it is shared with")
    return list(
        JobShare.objects.filter(job=job).select_related(
            "grantee_user", "grantee_project", "created_by"
        )
    )


def share_grantee_from(*, user_name: str | None, project_name: str | None):
    """(grantee user, grantee project) from names, refusing unknown ones with a field path."""
    user = project = None
    errors = []
    if user_name:
        user = get_user_model().objects.filter(username=user_name).first()
        if user is None:
            errors.append(f"user: no user {user_name!r}")
    if project_name:
        project = Project.objects.filter(name=project_name).first()
        if project is None:
            errors.append(f"project: no project {project_name!r}")
    if errors:
        raise ServiceError("; ".join(errors))
    return user, project


def share_grantee_from_form(data) -> tuple:
    """The grantee a share form names (``kind``: user or project, ``name``), as
    (user, project, label): the one reading of the job page's and the app page's forms."""
    kind = data.get("kind", "user")
    name = (data.get("name") or "").strip()
    if not name:
        raise ServiceError("name: the user or project to share with is required")
    user, project = share_grantee_from(
        user_name=name if kind == "user" else None,
        project_name=name if kind == "project" else None,
    )
    return user, project, f"{kind} {name}"


def share_as_json(share: JobShare) -> dict:
    return {
        "id": share.pk,
        "job": str(share.job.uuid),
        "user": share.grantee_user.username if share.grantee_user is not None else None,
        "project": share.grantee_project.name if share.grantee_project is not None else None,
        "createdBy": share.created_by.username,
        "created": utc_z(share.created),
    }
