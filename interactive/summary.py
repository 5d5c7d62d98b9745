"""What a session's pages and API answers show of it, once (never its app token)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.urls import reverse
from django.utils import timezone

from interactive.access import SERVING
from interactive.models import InteractiveSession
from interactive.services import (
    SessionPolicy,
    session_ends_at,
    session_extensions_left,
    session_idle_cull_at,
    session_policy,
)


def session_proxy_url(session: InteractiveSession) -> str:
    """The app's address on the proxy's origin: ``.../s/<key>/<landing>``."""
    base = settings.PORTAL_SESSION_PROXY_URL.rstrip("/")
    return f"{base}{session.prefix}{session.landing_path}"


def session_summary(
    session: InteractiveSession,
    *,
    policy: SessionPolicy | None = None,
    now: datetime | None = None,
) -> dict[str, Any]:
    """The session as pages and the API show it. ``open_path`` is the portal's sign-in
    hand-off a browser follows (``/sessions/<key>/open``); ``url`` the app on the proxy."""
    policy = policy or session_policy()
    now = now or timezone.now()
    job = session.job
    # A job's web port (interactive/web_ports.py) has neither a time box nor an idle cull.
    web_port = session.is_web_port
    ends_at = session_ends_at(session) if job.status in SERVING and not web_port else None
    cull_at = None if web_port else session_idle_cull_at(session, policy)
    warn = timedelta(seconds=policy.warn_s)
    return {
        "key": session.key,
        "job_id": str(job.uuid),
        "template": session.template.slug if session.template else None,
        "title": session.template.title if session.template else f"Web port {session.port}",
        "web_port": web_port,
        "status": job.status,
        "running": job.status in SERVING and bool(session.upstream),
        "url": session_proxy_url(session),
        "open_path": reverse("interactive:open", args=[session.key]),
        "open_to_project": session.open_to_project,
        "logdir": session.logdir or None,
        "created_at": session.created_at,
        "ends_at": ends_at,
        "idle_cull_at": cull_at,
        "extensions": session.extensions,
        "extensions_left": 0 if web_port else session_extensions_left(session, policy),
        "end_near": ends_at is not None and now >= ends_at - warn,
        "cull_near": cull_at is not None and now >= cull_at - warn,
        "owner": job.owner.username,
        "project": job.project.name,
    }
