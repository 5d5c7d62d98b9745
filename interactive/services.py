"""Starting, extending and stopping sessions (docs/sessions.md).

A session is a GPULab interactive job submitted through jobs' own submit service (the same
validation, quotas, reservations and reports as any job), plus its ``InteractiveSession`` row.
Its status changes only through jobs' services (the halt: ``job_halt_by_system``), never here.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from accounts.models import Project
from clusters.runtime.commands import split_command
from clusters.runtime.errors import RuntimeFailure
from clusters.services import engine_for
from core.errors import Conflict, FieldError, FieldErrors, NotAllowed
from interactive.access import SERVING
from interactive.models import InteractiveSession, SessionTemplate, session_key_new
from jobs.models import Job
from jobs.selectors import job_can_act
from jobs.spec.v2_scheduling import format_duration
from jobs.states import JobStatus
from jobs.system_actions import job_halt_by_system
from jobs.transitions import job_event_add
from jobs.user_actions.services import job_submit

log = logging.getLogger(__name__)

# Storage roots a TensorBoard session may read its logs from (the project's folders).
LOGDIR_ROOTS = ("/project", "/project_scratch")

# PID 1 of a session's container: runs the app, and on GPULab's halt signal (SIGUSR1) stops it
# with SIGTERM (JupyterLab and code-server save and shut down) and exits 123, the exit GPULab
# counts as HALTED. A docker stop's SIGTERM is passed on the same way.
HALT_WRAPPER = (
    'trap \'kill -TERM "$child" 2>/dev/null; wait "$child"; exit 123\' USR1; '
    'trap \'kill -TERM "$child" 2>/dev/null; wait "$child"; exit 143\' TERM; '
    '"$@" & child=$!; wait "$child"'
)


@dataclass(frozen=True)
class SessionPolicy:
    """The site's lifecycle settings (portal/settings.py PORTAL_SESSION_*), in seconds."""

    idle_s: int
    warn_s: int
    extend_s: int
    max_extends: int
    max_s: int
    max_gpus: int
    gpu_idle_percent: float = 5.0


def session_policy() -> SessionPolicy:
    return SessionPolicy(
        idle_s=settings.PORTAL_SESSION_IDLE_SECONDS,
        warn_s=settings.PORTAL_SESSION_WARN_SECONDS,
        extend_s=settings.PORTAL_SESSION_EXTEND_SECONDS,
        max_extends=settings.PORTAL_SESSION_MAX_EXTENDS,
        max_s=settings.PORTAL_SESSION_MAX_SECONDS,
        max_gpus=settings.PORTAL_SESSION_MAX_GPUS,
        gpu_idle_percent=float(settings.PORTAL_GPU_IDLE_PERCENT),
    )


def _minutes(seconds: int) -> str:
    return format_duration(max(60, seconds - seconds % 60))


def _logdir_check(logdir: str | None, template: SessionTemplate) -> str:
    """The folder TensorBoard reads: an absolute path in the project's storage."""
    if template.kind != SessionTemplate.Kind.TENSORBOARD and not logdir:
        return ""
    logdir = (logdir or LOGDIR_ROOTS[0]).strip()
    if len(logdir) > 500:  # InteractiveSession.logdir's column
        raise FieldErrors.single("logdir", "must be at most 500 characters")
    parts = logdir.split("/")
    if not logdir.startswith("/") or ".." in parts or any(c.isspace() for c in logdir):
        raise FieldErrors.single("logdir", "must be an absolute path without '..' or blanks")
    if not any(logdir == root or logdir.startswith(root + "/") for root in LOGDIR_ROOTS):
        roots = ", ".join(LOGDIR_ROOTS)
        raise FieldErrors.single("logdir", f"must be a folder in the project's storage ({roots})")
    return logdir.rstrip("/") or "/"


def session_document(
    *,
    key: str,
    template: SessionTemplate,
    gpus: int,
    seconds: int,
    logdir: str,
) -> dict[str, Any]:
    """The GPULab v2 job request of a session: interactive (start now or fail), its time box as
    maxDuration, no port mappings (the proxy reaches the container's bridge address), the
    template's command with its placeholders filled, run under the halt wrapper."""
    base_url = f"/s/{key}/"
    # Only these placeholders are filled: any other brace (a shell's ${VAR}) stays as written.
    command = template.command
    for name, value in (
        ("{base_url_no_trailing_slash}", base_url.rstrip("/")),
        ("{base_url}", base_url),
        ("{port}", str(template.port)),
        ("{logdir}", logdir or ""),
    ):
        command = command.replace(name, value)
    words = split_command(command) or []
    storage: list[dict[str, str]] = []
    if logdir:
        root = next(r for r in LOGDIR_ROOTS if logdir == r or logdir.startswith(r + "/"))
        storage.append({"hostPath": root, "containerPath": root})
    return {
        "name": f"{template.slug}-session-{key[:6]}",
        "description": f"{template.title} session {key}",
        "request": {
            "resources": {
                "gpus": gpus,
                "cpus": template.cpus,
                "cpuMemoryGb": template.memory_gb,
            },
            "docker": {
                "image": template.image,
                "command": ["sh", "-c", HALT_WRAPPER, "session", *words],
                "environment": {},
                "storage": storage,
                "portMappings": [],
            },
            "scheduling": {
                "interactive": True,
                "restartable": False,
                "maxDuration": format_duration(seconds),
                "minDuration": format_duration(seconds),
            },
        },
    }


def session_start(
    *,
    user,
    project: Project,
    template: SessionTemplate,
    gpus: int | None = None,
    hours: float | None = None,
    open_to_project: bool = False,
    logdir: str | None = None,
    now: datetime | None = None,
) -> InteractiveSession:
    """Submit the session's interactive job and record the session.

    Raises FieldErrors naming the field (``gpus``, ``hours``, ``logdir``, ``template``, or the
    job request's own paths from jobs' submit checks), NotAllowed for a project the user is not
    in. Nothing is written unless every check passes."""
    now = now or timezone.now()
    policy = session_policy()
    errors = []
    if not template.enabled:
        errors.append(FieldError("template", f"template {template.slug} is disabled"))
    gpus = template.gpus if gpus is None else gpus
    if not 0 <= gpus <= policy.max_gpus:
        errors.append(
            FieldError("gpus", f"must be between 0 and {policy.max_gpus} (PORTAL_SESSION_MAX_GPUS)")
        )
    if hours is None:
        seconds = int(template.time_box.total_seconds())
    else:
        seconds = int(round(hours * 3600))
        if not 60 <= seconds <= policy.max_s:
            errors.append(
                FieldError(
                    "hours",
                    f"must be between 1 minute and {policy.max_s / 3600:g} hours"
                    " (PORTAL_SESSION_MAX_SECONDS)",
                )
            )
    try:
        logdir = _logdir_check(logdir, template)
    except FieldErrors as exc:
        errors.extend(exc.errors)
    if errors:
        raise FieldErrors(errors)
    seconds = min(seconds, policy.max_s)
    key = session_key_new()
    document = session_document(
        key=key, template=template, gpus=gpus, seconds=seconds, logdir=logdir or ""
    )
    with transaction.atomic():
        job = job_submit(user=user, project=project, document=document, now=now)
        session = InteractiveSession.objects.create(
            key=key,
            job=job,
            template=template,
            open_to_project=open_to_project,
            port=template.port,
            strip_prefix=template.strip_prefix,
            landing_path=template.landing_path,
            logdir=logdir or "",
            created_at=now,
        )
        job_event_add(
            job=job,
            message=f"interactive session {key} ({template.title}), time box {format_duration(seconds)}",
            now=now,
        )
    return session


# --- what a session's page and answer show --------------------------------------------------


def session_ends_at(session: InteractiveSession) -> datetime | None:
    """When the time box ends: the job's maxDuration, counted from its start (less the run time
    of earlier runs, as the scheduler counts it). None until it runs."""
    job = session.job
    if job.started_at is None:
        return None
    return job.started_at + timedelta(seconds=job.max_duration_s - job.run_seconds_before)


def session_last_used(session: InteractiveSession) -> datetime | None:
    job = session.job
    moments = [m for m in (session.last_activity_at, job.started_at) if m is not None]
    return max(moments) if moments else None


def session_idle_cull_at(session: InteractiveSession, policy: SessionPolicy) -> datetime | None:
    """When an idle session would be culled, were it not used again (GPU use not counted)."""
    used = session_last_used(session)
    if used is None or session.job.status != JobStatus.RUNNING:
        return None
    return used + timedelta(seconds=policy.idle_s)


def session_extensions_left(session: InteractiveSession, policy: SessionPolicy) -> int:
    by_count = max(0, policy.max_extends - session.extensions)
    by_total = max(0, (policy.max_s - session.job.max_duration_s) // policy.extend_s)
    return min(by_count, by_total)


# --- extend and stop ------------------------------------------------------------------------


def _require_actor(user, session: InteractiveSession) -> None:
    if not job_can_act(user, session.job):
        raise NotAllowed("only members of the session's project may extend or stop it")
    if session.is_web_port:
        # The portal did not start this job: it has no time box of a session to extend, and
        # stopping it is the job's own cancel or halt.
        raise Conflict(
            f"{session.key} is the web port {session.port} of job {session.job.uuid}, not a"
            " session: cancel or halt the job itself"
        )


def session_extend(
    *, session: InteractiveSession, user, now: datetime | None = None
) -> InteractiveSession:
    """Raise the job's maxDuration by PORTAL_SESSION_EXTEND_SECONDS, at most
    PORTAL_SESSION_MAX_EXTENDS times and never past PORTAL_SESSION_MAX_SECONDS in all."""
    now = now or timezone.now()
    policy = session_policy()
    _require_actor(user, session)
    job = session.job
    if job.status not in (
        JobStatus.QUEUED,
        JobStatus.ASSIGNED,
        JobStatus.STARTING,
        JobStatus.RUNNING,
    ):
        raise Conflict(f"only a running session can be extended; this one is {job.status}")
    if session.extensions >= policy.max_extends:
        raise Conflict(
            f"no extensions left: at most {policy.max_extends} per session"
            " (PORTAL_SESSION_MAX_EXTENDS)"
        )
    new_max = job.max_duration_s + policy.extend_s
    if new_max > policy.max_s:
        raise Conflict(
            f"extending by {format_duration(policy.extend_s)} would make the session"
            f" {format_duration(new_max)} long; at most {format_duration(policy.max_s)}"
            " (PORTAL_SESSION_MAX_SECONDS)"
        )
    request = dict(job.request)
    # minDuration follows: the scheduler never halts a session for another job's sake.
    request["scheduling"] = {
        **request["scheduling"],
        "maxDuration": format_duration(new_max),
        "minDuration": format_duration(new_max),
    }
    with transaction.atomic():
        # Compare-and-swap: two clicks at once extend once.
        won = Job.objects.filter(pk=job.pk, max_duration_s=job.max_duration_s).update(
            max_duration_s=new_max, min_duration_s=new_max, request=request
        )
        if not won:
            raise Conflict("the session was extended meanwhile; reload and try again")
        InteractiveSession.objects.filter(pk=session.pk).update(
            extensions=session.extensions + 1, end_warned_at=None
        )
        job.max_duration_s, job.request = new_max, request
        session.extensions += 1
        session.end_warned_at = None
        ends = session_ends_at(session)
        job_event_add(
            job=job,
            message=(
                f"session extended by {format_duration(policy.extend_s)} by {user.username}"
                f" (extension {session.extensions} of {policy.max_extends}); maxDuration now"
                f" {format_duration(new_max)}"
                + (f", ends {ends:%Y-%m-%d %H:%M} UTC" if ends else "")
            ),
            now=now,
        )
    return session


def session_halt(*, session: InteractiveSession, reason: str, now: datetime | None = None) -> Job:
    """GPULab's halt of the session's job (SIGUSR1: the app saves and stops, exit 123): the
    procedure every stop of a session uses, the user's, the admin's and the lifecycle's."""
    return job_halt_by_system(job=session.job, halt_info={"reason": reason}, now=now)


def session_stop(*, session: InteractiveSession, user, now: datetime | None = None) -> Job:
    """The user's stop: a running session is halted (its app saves its work); one that has not
    started yet is cancelled."""
    from jobs.user_actions.services import job_cancel

    _require_actor(user, session)
    job = session.job
    if job.status == JobStatus.RUNNING:
        return session_halt(session=session, reason=f"session stopped by {user.username}", now=now)
    if job.status in SERVING:
        raise Conflict("the session is stopping already")
    return job_cancel(job=job, user=user, reason="session stopped", now=now)


# --- where the container answers --------------------------------------------------------------


def session_upstream_record(*, session: InteractiveSession) -> str:
    """Read the running container's bridge address on its slave and record "ip:port" (the
    proxy's upstream). Answers what was recorded ("" when the engine could not say)."""
    job = session.job
    if job.status not in SERVING or job.slave is None or not job.container_id:
        return ""
    try:
        with engine_for(job.slave) as engine:
            address = engine.container_address(job.container_id)
    except (RuntimeFailure, AttributeError) as exc:
        log.warning("session %s: no container address yet: %s", session.key, exc)
        return ""
    if not address:
        return ""
    upstream = f"{address}:{session.port}"
    InteractiveSession.objects.filter(pk=session.pk).update(upstream=upstream)
    session.upstream = upstream
    return upstream


def session_upstream_clear(*, job: Job) -> None:
    InteractiveSession.objects.filter(job=job).exclude(upstream="").update(upstream="")
