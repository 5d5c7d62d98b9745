"""Who may see and act on which jobs. Views, API and admin filter only through these."""

from django.contrib.auth.models import AnonymousUser
from django.db.models import Exists, OuterRef, Q, QuerySet

from accounts.permissions import (
    may_act_on_all_jobs,
    may_delete_all_jobs,
    may_view_all_jobs,
)
from accounts.permissions import user_is_admin as user_is_admin  # superusers only; see there
from accounts.selectors import project_ids_of as project_ids_of  # re-exported for jobs
from accounts.selectors import projects_of as projects_of
from accounts.selectors import sole_project_of as sole_project_of
from jobs.models import Job, JobShare
from jobs.states import DELETED


def job_list_visible_to(user) -> QuerySet[Job]:
    """Every job a logged-in user may list (others' projects sanitised when shown)."""
    if isinstance(user, AnonymousUser) or not user.is_authenticated:
        return Job.objects.none()
    # Not slave__cluster: pages and answers show the slave's cluster_id, not its row.
    return Job.objects.select_related("owner", "project", "slave", "explanation").annotate(
        shared_with_viewer=Exists(shares_received_by(user).filter(job=OuterRef("pk")))
    )


def job_visible_to(user, job_uuid) -> Job | None:
    """``job_list_visible_to(user)``'s job of this uuid: with its owner, project, slave,
    explanation and ``shared_with_viewer`` (one query), or None."""
    try:
        return job_list_visible_to(user).get(uuid=job_uuid)
    except Job.DoesNotExist:
        return None


def shares_received_by(user) -> QuerySet[JobShare]:
    """The shares that give ``user`` a full read of a job: to them, or to one of their
    projects."""
    if not user or not user.is_authenticated:
        return JobShare.objects.none()
    return JobShare.objects.filter(
        Q(grantee_user_id=user.pk) | Q(grantee_project_id__in=project_ids_of(user))
    )


def job_shared_with(user, job: Job) -> bool:
    """The job is shared with ``user`` (read-only). A job loaded through
    ``job_list_visible_to(user)`` carries the answer already (no query per listed job)."""
    known = getattr(job, "shared_with_viewer", None)
    if known is not None:
        return bool(known)
    return shares_received_by(user).filter(job_id=job.pk).exists()


def job_list_not_deleted(queryset: QuerySet[Job]) -> QuerySet[Job]:
    return queryset.exclude(status__in=DELETED)


def job_sees_full(user, job: Job) -> bool:
    """Members of the job's project, holders of ``jobs.view_job`` (superusers) and the people
    the job is shared with (jobs/actions/shares.py) see everything: request, history, log, outputs;
    others a sanitised copy. The one read rule of every page, API and download."""
    if job.project_id in project_ids_of(user) or may_view_all_jobs(user):
        return True
    return job_shared_with(user, job)


def job_can_act(user, job: Job, *, delete: bool = False) -> bool:
    """Members of the job's project cancel, halt, hold, release and delete it; anyone else
    needs ``jobs.change_job`` (``jobs.delete_job`` to delete): ``is_staff`` alone is not enough."""
    if job.project_id in project_ids_of(user):
        return True
    return may_delete_all_jobs(user) if delete else may_act_on_all_jobs(user)
