"""Any web port a job declares, served through the session proxy (docs/sessions.md "Any job's
web port"; issue 30 item 2).

A job declares its web ports as the ``containerPort``s of ``request.docker.portMappings``
(GPULab's own field, with or without a hostPort). While it runs, whoever may open its sessions
(``interactive.access.session_may_open``: the owner, those the job is shared with, superusers)
opens such a port at ``/s/<key>/``: an ``InteractiveSession`` row with no template, that port,
the prefix stripped (an arbitrary app does not know its base URL) and the container's bridge
address as its upstream. The portal did not start these jobs, so the lifecycle leaves them
alone: no time box, no idle cull, no Extend or Stop through the session routes.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from core.errors import Conflict, FieldErrors, NotAllowed
from interactive.access import session_may_open
from interactive.models import InteractiveSession
from interactive.services import session_upstream_record
from jobs.models import Job
from jobs.states import JobStatus
from jobs.transitions import job_event_add

PORTS_FIELD = "request.docker.portMappings"


def job_web_ports(job: Job) -> list[int]:
    """The container ports the job declares, in the request's order, each once."""
    docker = (job.request or {}).get("docker") or {}
    ports: list[int] = []
    for mapping in docker.get("portMappings") or ():
        # GPULab's shorthand, a bare port number, is a mapping too.
        port = mapping.get("containerPort") if isinstance(mapping, dict) else mapping
        if isinstance(port, int) and not isinstance(port, bool) and port not in ports:
            ports.append(port)
    return ports


def job_ports_may_open(*, job: Job, user) -> bool:
    """The sessions' rule (``session_may_open``) for a row not made yet: never opened to the
    project, so the owner, those the job is shared with and superusers."""
    return session_may_open(session=InteractiveSession(job=job), user=user)


def job_port_open(*, job: Job, port: int, user, now: datetime | None = None) -> InteractiveSession:
    """The proxy's row for this port of this running job, made on the first call and reused
    after; its upstream read from the container (as a session's on RUNNING) when missing.

    Raises NotAllowed for a user who may not open it, FieldErrors naming ``port`` for a port
    the job does not declare, Conflict naming ``status`` for a job not RUNNING (or whose
    container's address the engine cannot tell yet)."""
    now = now or timezone.now()
    if not job_ports_may_open(job=job, user=user):
        raise NotAllowed("only the job's owner and those it is shared with may open its web ports")
    declared = job_web_ports(job)
    if port not in declared:
        listed = ", ".join(str(p) for p in declared) or "none"
        raise FieldErrors.single(
            "port",
            f"the job does not declare container port {port} in {PORTS_FIELD}"
            f" (it declares: {listed})",
        )
    if job.status != JobStatus.RUNNING:
        raise Conflict(f"status: the job is {job.status}; its web ports open only while RUNNING")
    with transaction.atomic():
        session, created = InteractiveSession.objects.select_related("job__slave").get_or_create(
            job=job,
            port=port,
            defaults={"strip_prefix": True, "landing_path": "", "created_at": now},
        )
        if created:
            job_event_add(
                job=job,
                message=f"web port {port} opened through the portal by {user.username}"
                f" at {session.prefix}",
                now=now,
            )
    session.job = job
    if not session.upstream:
        session_upstream_record(session=session)
    if not session.upstream:
        raise Conflict(
            "status: the job's container has no address on its network yet; try again shortly"
        )
    return session


# --- the job page's card (registered through jobs/web/page_hooks.py) ------------------------


def job_web_ports_section(job: Job, user, full: bool) -> dict[str, Any] | None:
    """ "Open port N through the portal", one button per declared port, for a running job to
    those who may open it. None (no card) otherwise."""
    if not full or job.status != JobStatus.RUNNING:
        return None
    ports = job_web_ports(job)
    if not ports or not job_ports_may_open(job=job, user=user):
        return None
    opened = dict(
        InteractiveSession.objects.filter(job_id=job.pk, port__in=ports).values_list("port", "key")
    )
    return {
        "job_id": str(job.uuid),
        "ports": [{"port": p, "key": opened.get(p)} for p in ports],
    }
