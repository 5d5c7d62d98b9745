"""The session's card on its job page (templates/interactive/_job_session.html), registered as
a section of the job page (jobs/web/page_hooks.py) in ``InteractiveConfig.ready``: the
countdown to the time box's end and to an idle cull, a banner when either is near, Open,
Extend and Stop. Beside it, on a running job that declares web ports, "Open port N through the
portal" (interactive/web_ports.py)."""

from __future__ import annotations

from typing import Any

from interactive.access import session_may_open
from interactive.models import InteractiveSession
from interactive.summary import session_summary
from interactive.web_ports import job_web_ports_section
from jobs.models import Job
from jobs.selectors import job_can_act
from jobs.web.page_hooks import JobSection


def job_session_section(job: Job, user, full: bool) -> dict[str, Any] | None:
    """For whoever reads the job in full, when the job is a session (None: no card)."""
    if not full or not job.interactive:
        return None
    session = (
        InteractiveSession.objects.select_related("template", "job__owner", "job__project")
        .filter(job_id=job.pk, template__isnull=False)
        .first()
    )
    if session is None:
        return None
    return {
        **session_summary(session),
        "may_open": session_may_open(session=session, user=user),
        "may_act": job_can_act(user, session.job),
    }


SESSION_SECTION = JobSection(
    name="interactive",
    template="interactive/_job_session.html",
    context=job_session_section,
)


WEB_PORTS_SECTION = JobSection(
    name="interactive-web-ports",
    template="interactive/_job_web_ports.html",
    context=job_web_ports_section,
)
