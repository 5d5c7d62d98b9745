"""Who may open a session, and where the session proxy sends their requests (docs/sessions.md).

The proxy (interactive/proxy*.py) calls ``session_upstream_for`` on every request it forwards
(cached a few seconds), so a user removed from a share or a project loses access within that
time, and ``session_activity_record`` for the idle rule of the lifecycle (interactive/lifecycle.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.contrib.auth import get_user_model
from django.db.models import Q

from accounts.selectors import project_ids_of
from interactive.models import InteractiveSession
from jobs.selectors import job_shared_with
from jobs.states import JobStatus

# The states in which the app may still answer: MUSTHALT and HALTING are the halt procedure's
# grace, when a notebook saves its work and its user may still be looking.
SERVING = frozenset({JobStatus.RUNNING, JobStatus.MUSTHALT, JobStatus.HALTING})

# One write per half minute of activity at most: the proxy calls on every request.
ACTIVITY_GRANULARITY = timedelta(seconds=30)

NO_SUCH_SESSION = "no such session"
NOT_ALLOWED = "not allowed"
NOT_RUNNING = "not running"


@dataclass(frozen=True)
class Upstream:
    address: str  # "172.18.0.5:8888"
    prefix: str  # "/s/<key>/"
    strip_prefix: bool
    # Sent upstream as "Authorization: token <t>" (JupyterLab); never to the browser.
    app_token: str = field(repr=False)


def session_may_open(*, session: InteractiveSession, user) -> bool:
    """The owner; a member of the job's project when the owner opened it to the project; a
    user the job is shared with (to them or to one of their projects); a superuser."""
    if user is None or not user.is_authenticated or not user.is_active:
        return False
    job = session.job
    if user.is_superuser or job.owner_id == user.pk:
        return True
    if session.open_to_project and job.project_id in project_ids_of(user):
        return True
    return job_shared_with(user, job)


def session_upstream_for(*, key: str, user_id: int) -> Upstream | str:
    """Where to send this user's request for session ``key``, or why not: "no such session",
    "not allowed" or "not running" (the proxy answers 404, 403 and 503)."""
    session = (
        InteractiveSession.objects.select_related("job").filter(key=key).first() if key else None
    )
    if session is None:
        return NO_SUCH_SESSION
    user = get_user_model().objects.filter(pk=user_id).first()
    if user is None or not session_may_open(session=session, user=user):
        return NOT_ALLOWED
    if session.job.status not in SERVING or not session.upstream:
        return NOT_RUNNING
    return Upstream(
        address=session.upstream,
        prefix=session.prefix,
        strip_prefix=session.strip_prefix,
        app_token=session.app_token,
    )


def session_activity_record(*, key: str, at: datetime) -> None:
    """The session was used at ``at`` (an HTTP request or WebSocket message through the proxy).
    One UPDATE that writes only when the recorded activity is older than 30 s."""
    InteractiveSession.objects.filter(key=key).filter(
        Q(last_activity_at__isnull=True) | Q(last_activity_at__lt=at - ACTIVITY_GRANULARITY)
    ).update(last_activity_at=at, idle_warned_at=None)
