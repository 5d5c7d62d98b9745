"""The sessions' lifecycle: warnings before an idle cull or the time box's end, then the GPULab
halt (docs/sessions.md "Policy and lifecycle").

``police_decide`` is the pure rule (facts and a clock in, actions out); ``sessions_police``
reads the facts of every running session, decides, and applies: every warning and every stop is
written to the job's history (JobEvent) and warnings are mailed to the owner.

Idle: no request through the proxy (``last_activity_at``, the job's start before the first
one) and, where GPU samples exist (jobs.models.JobSample), no GPU busier than
PORTAL_GPU_IDLE_PERCENT within PORTAL_SESSION_IDLE_SECONDS. A warning comes
PORTAL_SESSION_WARN_SECONDS before the cull; a cull never comes sooner than that after its
warning (a sweep that missed its minute warns late rather than culls unwarned). Any use after
the warning starts the count again.

Time box: warned PORTAL_SESSION_WARN_SECONDS before the job's maxDuration ends, then halted a
little before it (END_MARGIN) so the app saves its work through the halt procedure rather than
being cancelled by the scheduler at the deadline. "Extend" clears the warning.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum

from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction
from django.utils import timezone

from core.errors import Conflict
from core.tasks import fire
from interactive import task_names
from interactive.models import InteractiveSession
from interactive.services import (
    SessionPolicy,
    session_ends_at,
    session_halt,
    session_policy,
    session_upstream_record,
)
from jobs.models import JobSample
from jobs.states import JobStatus
from jobs.transitions import job_event_add

log = logging.getLogger(__name__)

WARNING_MAIL_TASK = task_names.SESSION_WARNING_MAIL

# The sweep runs every minute: halting this long before the deadline lands before it.
END_MARGIN = timedelta(seconds=90)


class Kind(StrEnum):
    WARN_IDLE = "warn_idle"
    CULL_IDLE = "cull_idle"
    WARN_END = "warn_end"
    END = "end"
    RECORD_UPSTREAM = "record_upstream"


@dataclass(frozen=True)
class SessionFacts:
    session_id: int
    status: str
    started_at: datetime | None
    ends_at: datetime | None  # the time box's end (the job's maxDuration)
    last_activity_at: datetime | None  # the proxy's last request
    # The last GPU sample within the idle window with a GPU in use; None: no such sample.
    gpu_busy_at: datetime | None
    idle_warned_at: datetime | None
    end_warned_at: datetime | None
    upstream: str


@dataclass(frozen=True)
class Action:
    kind: Kind
    session_id: int
    message: str
    at: datetime | None = None  # for a warning: when the cull or the end comes


def _utc(moment: datetime) -> str:
    return f"{moment.astimezone(UTC):%Y-%m-%d %H:%M} UTC"


def last_used(facts: SessionFacts) -> datetime | None:
    moments = [m for m in (facts.started_at, facts.last_activity_at, facts.gpu_busy_at) if m]
    return max(moments) if moments else None


def police_decide(
    facts: Iterable[SessionFacts], now: datetime, policy: SessionPolicy
) -> list[Action]:
    """What to do now for each session: a warning, a cull, the time box's end, or recording a
    missing upstream. Pure: the clock is ``now``."""
    actions = []
    warn = timedelta(seconds=policy.warn_s)
    idle = timedelta(seconds=policy.idle_s)
    idle_minutes = policy.idle_s // 60
    for f in facts:
        if f.status != JobStatus.RUNNING:
            continue
        if not f.upstream:
            actions.append(Action(Kind.RECORD_UPSTREAM, f.session_id, "upstream not recorded"))
        used = last_used(f)
        if f.ends_at is not None:
            if now >= f.ends_at - END_MARGIN:
                actions.append(
                    Action(Kind.END, f.session_id, "ended: the session's time box is over")
                )
                continue
            if f.end_warned_at is None and now >= f.ends_at - warn:
                actions.append(
                    Action(
                        Kind.WARN_END,
                        f.session_id,
                        f"the session's time box ends at {_utc(f.ends_at)}; extend it to keep it",
                        at=f.ends_at,
                    )
                )
        if used is None:
            continue
        cull_at = used + idle
        warned = f.idle_warned_at is not None and f.idle_warned_at >= used
        if warned and f.idle_warned_at is not None and now >= max(cull_at, f.idle_warned_at + warn):
            actions.append(
                Action(Kind.CULL_IDLE, f.session_id, f"culled: no activity for {idle_minutes} min")
            )
        elif not warned and now >= cull_at - warn:
            at = max(cull_at, now + warn)
            actions.append(
                Action(
                    Kind.WARN_IDLE,
                    f.session_id,
                    f"idle: no activity since {_utc(used)}; the session will be culled at"
                    f" {_utc(at)} unless it is used",
                    at=at,
                )
            )
    return actions


# --- the facts, read from the rows ------------------------------------------------------------


def _gpu_busy_at(job_ids: list[int], since: datetime, percent: float) -> dict[int, datetime]:
    """Per job: the last sample since ``since`` with a GPU at least ``percent`` busy."""
    busy: dict[int, datetime] = {}
    samples = JobSample.objects.filter(job_id__in=job_ids, time__gte=since).values_list(
        "job_id", "time", "gpus"
    )
    for job_id, time, gpus in samples.order_by():
        if any((g or {}).get("percent", 0) >= percent for g in gpus or ()):
            if job_id not in busy or time > busy[job_id]:
                busy[job_id] = time
    return busy


def running_sessions():
    """The running sessions the portal started. A job's web port opened through the proxy
    (interactive/web_ports.py: no template) is the job's own business: never warned, culled or
    ended here."""
    return InteractiveSession.objects.select_related("job", "job__slave", "job__owner").filter(
        job__status=JobStatus.RUNNING, template__isnull=False
    )


def session_facts(sessions: list[InteractiveSession], now: datetime, policy: SessionPolicy):
    since = now - timedelta(seconds=policy.idle_s)
    busy = _gpu_busy_at([s.job_id for s in sessions], since, policy.gpu_idle_percent)
    return [
        SessionFacts(
            session_id=s.pk,
            status=s.job.status,
            started_at=s.job.started_at,
            ends_at=session_ends_at(s),
            last_activity_at=s.last_activity_at,
            gpu_busy_at=busy.get(s.job_id),
            idle_warned_at=s.idle_warned_at,
            end_warned_at=s.end_warned_at,
            upstream=s.upstream,
        )
        for s in sessions
    ]


# --- applying ---------------------------------------------------------------------------------


def _warn(session: InteractiveSession, action: Action, field: str, now: datetime) -> bool:
    """Mark the warning (compare-and-swap: two sweeps warn once), write it in the history and
    mail it to the owner."""
    with transaction.atomic():
        won = InteractiveSession.objects.filter(
            pk=session.pk, **{field: getattr(session, field)}
        ).update(**{field: now})
        if not won:
            return False
        job_event_add(job=session.job, message=f"session warning: {action.message}", now=now)
        if session.job.owner.email:
            fire(WARNING_MAIL_TASK, session.pk, action.message)
    return True


def _halt(session: InteractiveSession, reason: str, now: datetime) -> bool:
    try:
        session_halt(session=session, reason=reason, now=now)
    except Conflict as exc:  # ended or halted meanwhile: nothing to do
        log.info("session %s not halted: %s", session.key, exc)
        return False
    return True


def sessions_police(*, now: datetime | None = None) -> list[Action]:
    """One sweep over the running sessions; answers the actions taken."""
    now = now or timezone.now()
    policy = session_policy()
    sessions = {s.pk: s for s in running_sessions()}
    if not sessions:
        return []
    actions = police_decide(session_facts(list(sessions.values()), now, policy), now, policy)
    done = []
    for action in actions:
        session = sessions[action.session_id]
        if action.kind == Kind.RECORD_UPSTREAM:
            ok = bool(session_upstream_record(session=session))
        elif action.kind == Kind.WARN_IDLE:
            ok = _warn(session, action, "idle_warned_at", now)
        elif action.kind == Kind.WARN_END:
            ok = _warn(session, action, "end_warned_at", now)
        else:  # CULL_IDLE, END: the GPULab halt, its reason in the job's history
            ok = _halt(session, action.message, now)
        if ok:
            done.append(action)
    return done


def session_warning_mail_send(*, session_id: int, message: str) -> int:
    """The warning, mailed to the session's owner (their address on their account)."""
    session = (
        InteractiveSession.objects.select_related("job__owner", "template")
        .filter(pk=session_id)
        .first()
    )
    if session is None or not session.job.owner.email:
        return 0
    title = session.template.title if session.template else "interactive"
    link = f"{settings.PORTAL_BASE_URL}/sessions/" if settings.PORTAL_BASE_URL else ""
    body = f"Your {title} session {session.key} (job {session.job.uuid}): {message}."
    if link:
        body += f"\n\nOpen, extend or stop it at {link}"
    return send_mail(
        subject=f"[GPU Portal] {title} session: {message.split(';')[0]}",
        message=body,
        from_email=None,
        recipient_list=[session.job.owner.email],
    )
