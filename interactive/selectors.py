"""Which sessions a user sees: those they may open (interactive/access.py's rule, as a query).
Pages and the API list and find sessions only through these."""

from __future__ import annotations

from django.db.models import Q, QuerySet

from accounts.selectors import project_ids_of
from interactive.access import session_may_open
from interactive.models import InteractiveSession
from jobs.selectors import shares_received_by
from jobs.states import JobStatus


def session_list_visible_to(user) -> QuerySet[InteractiveSession]:
    """Their own sessions, their projects' sessions opened to the project, the sessions whose
    job is shared with them; every session for a superuser. Newest first."""
    # A deleted job's session is gone from lists as its job is (GPULab's DELETE hides a job).
    rows = InteractiveSession.objects.select_related(
        "job", "job__owner", "job__project", "job__slave", "template"
    ).exclude(job__status=JobStatus.DELETED)
    if not user or not user.is_authenticated or not user.is_active:
        return rows.none()
    if user.is_superuser:
        return rows
    return rows.filter(
        Q(job__owner=user)
        | Q(open_to_project=True, job__project_id__in=project_ids_of(user))
        | Q(job__in=shares_received_by(user).values("job_id"))
    )


def session_visible_to(user, key: str) -> InteractiveSession | None:
    session = session_list_visible_to(user).filter(key=key).first()
    if session is None or not session_may_open(session=session, user=user):
        return None
    return session
