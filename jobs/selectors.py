"""Who may see and act on which jobs. Views, API and admin filter only through these."""

from django.contrib.auth.models import AnonymousUser
from django.db.models import QuerySet

from jobs.models import Job
from jobs.states import DELETED
from portal.models import Membership


def user_is_admin(user) -> bool:
    return bool(user and user.is_authenticated and (user.is_staff or user.is_superuser))


def project_ids_of(user) -> set[int]:
    if not user or not user.is_authenticated:
        return set()
    cached = getattr(user, "_portal_project_ids", None)
    if cached is None:
        cached = set(Membership.objects.filter(user=user).values_list("project_id", flat=True))
        user._portal_project_ids = cached
    return cached


def job_list_visible_to(user) -> QuerySet[Job]:
    """Every job a logged-in user may list (others' projects sanitised when shown)."""
    if isinstance(user, AnonymousUser) or not user.is_authenticated:
        return Job.objects.none()
    return Job.objects.select_related("owner", "project", "slave", "slave__cluster")


def job_list_not_deleted(queryset: QuerySet[Job]) -> QuerySet[Job]:
    return queryset.exclude(status__in=DELETED)


def job_sees_full(user, job: Job) -> bool:
    """Members of the job's project and admins see everything; others a sanitised copy."""
    return user_is_admin(user) or job.project_id in project_ids_of(user)


def job_can_act(user, job: Job) -> bool:
    """Only members of the job's project (and admins) cancel, halt, hold, release, delete."""
    return job_sees_full(user, job)


def projects_of(user):
    from portal.models import Project

    if not user or not user.is_authenticated:
        return Project.objects.none()
    return Project.objects.filter(memberships__user=user).order_by("name")
