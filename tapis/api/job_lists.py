"""Which jobs Tapis' job lists and searches show, and in what order: ``getJobList``,
``getJobSearchList`` and its SQL-like form share these (docs/tapis.md)."""

from __future__ import annotations

from django.db.models import Exists, OuterRef, Q, QuerySet

from core.api_errors import BadRequest
from jobs.models import Job
from jobs.selectors import job_list_not_deleted, job_list_visible_to, project_ids_of
from tapis.models import HiddenJob

LIST_TYPES = ("MY_JOBS", "SHARED_JOBS", "ALL_JOBS")
ORDER_FIELDS = {"created": "created", "name": "name", "lastUpdated": "status_updated"}


def jobs_of_list_type(user, list_type: str | None) -> QuerySet[Job]:
    """``listType`` MY_JOBS (the default: the caller's own), SHARED_JOBS (other members' jobs
    of the caller's projects and jobs shared with the caller) or ALL_JOBS; never deleted jobs,
    nor jobs hidden with hideJob (Tapis lists only visible jobs)."""
    list_type = (list_type or "MY_JOBS").upper()
    jobs = job_list_not_deleted(job_list_visible_to(user)).filter(
        ~Exists(HiddenJob.objects.filter(job=OuterRef("pk")))
    )
    mine = Q(owner=user)
    # Tapis' "shared": other members' jobs of the caller's projects and jobs shared with the
    # caller (jobs/user_actions/shares.py; job_list_visible_to annotates shared_with_viewer).
    shared = (Q(project_id__in=project_ids_of(user)) | Q(shared_with_viewer=True)) & ~mine
    if list_type == "MY_JOBS":
        return jobs.filter(mine)
    if list_type == "SHARED_JOBS":
        return jobs.filter(shared)
    if list_type == "ALL_JOBS":
        return jobs.filter(mine | shared)
    raise BadRequest(
        "invalid query parameter listType", ["listType: must be MY_JOBS, SHARED_JOBS or ALL_JOBS"]
    )


def job_order(value: str | None) -> list[str]:
    """Tapis' ``orderBy``: ``created``, ``name(asc)``, ``lastUpdated(desc)``; default newest
    first."""
    if not value:
        return ["-created", "-id"]
    field, _, direction = value.partition("(")
    direction = direction.rstrip(")").lower() or "asc"
    column = ORDER_FIELDS.get(field.strip())
    if column is None or direction not in ("asc", "desc"):
        raise BadRequest(
            "invalid query parameter orderBy",
            [f"orderBy: must be one of {', '.join(ORDER_FIELDS)}, optionally (asc) or (desc)"],
        )
    sign = "-" if direction == "desc" else ""
    return [f"{sign}{column}", f"{sign}id"]
