"""The sessions pages: thin views over interactive/services.py (docs/sessions.md)."""

from __future__ import annotations

from urllib.parse import urlencode

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponseRedirect
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_POST

from core.errors import FieldErrors, ServiceError
from interactive.access import SERVING
from interactive.forms import SessionStartForm
from interactive.models import InteractiveSession
from interactive.selectors import session_list_visible_to, session_visible_to
from interactive.services import session_extend, session_policy, session_start, session_stop
from interactive.summary import session_summary
from interactive.tickets import ticket_make
from interactive.web_ports import job_port_open
from jobs.selectors import job_can_act, job_visible_to

LIST_ROWS = 50
FORM_FIELDS = {"template", "project", "gpus", "hours", "open_to_project", "logdir"}


def _rows(user) -> list[dict]:
    policy = session_policy()
    rows = []
    for session in session_list_visible_to(user)[:LIST_ROWS]:
        rows.append(
            {
                **session_summary(session, policy=policy),
                "may_act": job_can_act(user, session.job),
                "job": session.job,
            }
        )
    return rows


def _page(request, form: SessionStartForm, status: int = 200):
    policy = session_policy()
    rows = _rows(request.user)
    # Jobs' web ports (interactive/web_ports.py) are listed apart: no countdown, no Extend.
    return render(
        request,
        "interactive/list.html",
        {
            "form": form,
            "sessions": [r for r in rows if not r["web_port"]],
            "web_ports": [r for r in rows if r["web_port"]],
            "policy": policy,
        },
        status=status,
    )


@login_required
@require_GET
def sessions_page(request):
    return _page(request, SessionStartForm(user=request.user))


@login_required
@require_POST
def session_new(request):
    form = SessionStartForm(request.POST, user=request.user)
    if not form.is_valid():
        return _page(request, form, status=400)
    data = form.cleaned_data
    try:
        session = session_start(
            user=request.user,
            project=data["project"],
            template=data["template"],
            gpus=data["gpus"],
            hours=data["hours"],
            open_to_project=data["open_to_project"],
            logdir=data["logdir"] or None,
        )
    except FieldErrors as exc:
        for error in exc.errors:
            form.add_error(error.path if error.path in FORM_FIELDS else None, str(error))
        return _page(request, form, status=400)
    except ServiceError as exc:
        form.add_error(None, str(exc))
        return _page(request, form, status=exc.status_code)
    session.job.refresh_from_db()
    if session.job.status == "FAILED":
        messages.error(request, f"The session could not start: {session.job.end_reason}")
    else:
        messages.success(request, f"{data['template'].title} session {session.key} started.")
    return redirect("interactive:list")


def _visible(request, key: str) -> InteractiveSession:
    session = session_visible_to(request.user, key)
    if session is None:
        raise Http404("no such session")
    return session


@login_required
@require_GET
def session_open(request, key: str):
    """The sign-in hand-off: a one-minute ticket to the proxy, which sets its own cookie for
    ``/s/<key>/`` and sends the browser on to the app (interactive/tickets.py)."""
    session = _visible(request, key)
    if session.job.status not in SERVING or not session.upstream:
        messages.warning(request, f"Session {key} is not running ({session.job.status}).")
        return redirect("interactive:list")
    ticket = ticket_make(key=session.key, user_id=request.user.pk)
    base = settings.PORTAL_SESSION_PROXY_URL.rstrip("/")
    return HttpResponseRedirect(
        f"{base}{session.prefix}_portal/auth?{urlencode({'ticket': ticket})}"
    )


def _back(request):
    target = request.POST.get("next") or ""
    if target and url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}):
        return HttpResponseRedirect(target)
    return redirect("interactive:list")


def _session_act(request, key: str, act, *, done: str, refused: str):
    """Extend or Stop from a page: the service's refusal, or what was done, as a message."""
    session = _visible(request, key)
    try:
        act(session=session, user=request.user)
    except ServiceError as exc:
        messages.error(request, f"{refused}: {exc}")
    else:
        messages.success(request, done)
    return _back(request)


@login_required
@require_POST
def session_extend_view(request, key: str):
    return _session_act(
        request, key, session_extend, done=f"Session {key} extended.", refused="Not extended"
    )


@login_required
@require_POST
def session_stop_view(request, key: str):
    done = f"Session {key} is stopping: its app saves its work first."
    return _session_act(request, key, session_stop, done=done, refused="Not stopped")


@login_required
@require_POST
def job_port_open_view(request, job_uuid, port: int):
    """ "Open port N through the portal" on a running job's page: the port's row (made once),
    then the same sign-in hand-off as a session's Open."""
    job = job_visible_to(request.user, job_uuid)
    if job is None:
        raise Http404("no such job")
    try:
        session = job_port_open(job=job, port=port, user=request.user)
    except (FieldErrors, ServiceError) as exc:
        messages.error(request, f"Port {port} not opened: {exc}")
        return redirect("jobs:detail", job.uuid)
    return redirect("interactive:open", session.key)
