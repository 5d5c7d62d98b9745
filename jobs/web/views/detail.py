"""The job page: request, state and timeline, placement, queue explanations, halts, restart
chain, live log, and the actions the state allows; and its outputs table and share form
(templates/jobs/_job_outputs.html, _job_shares.html), with their download and share/revoke
routes. Rules live in ``jobs.execution.outputs`` and ``jobs.user_actions.shares``; these views
only call them. (The job's subscriptions and deliveries are the notifications app's section of
the page.)"""

import json
from collections.abc import Sequence
from functools import partial
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Q
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_http_methods, require_POST

from clusters.models import Gpu
from core.errors import NotAllowed, ServiceError
from core.timefmt import parse_utc_z
from jobs.api.gpulab_json import job_to_gpulab
from jobs.execution.outputs import job_output_response, job_outputs_list
from jobs.models import Job, JobEvent, JobShare
from jobs.selectors import job_can_act, job_list_visible_to, job_sees_full
from jobs.states import ACTIVE, HOLDS_RESOURCES, PENDING
from jobs.submit.estimates import start_estimate_json
from jobs.transitions import Stage, job_tapis_summary
from jobs.user_actions.registry import ACTIONS, whole_gang_info
from jobs.user_actions.shares import (
    job_share_create,
    job_share_revoke,
    job_shares_list,
)
from jobs.web.forms import share_add_from_form, share_revoke_from_form
from jobs.web.page_hooks import job_sections
from jobs.web.views.common import action_buttons, present, visible_job
from jobs.web.views.log import STARTS_SOON, initial_log

TIMELINE_LIMIT = 200
CHAIN_LIMIT = 50
DETAIL_RELATED = ("restart_of", "restart_of__project", "restarted_as", "restarted_as__project")


def _live_context(request, job: Job) -> dict:
    """Everything of the job page that changes while the job is active (the polled part)."""
    user = request.user
    now = timezone.now()
    present(job, user, now=now)
    full = job.ui_full
    can_act = job_can_act(user, job)

    shown = JobEvent.objects.filter(job=job)
    if not full:
        # Messages name people ("cancelled by alice"): outsiders see the state changes only.
        shown = shown.filter(type=JobEvent.Type.STATUS_CHANGE)
    total_events = shown.count()
    newest = list(shown.order_by("-time", "-id")[:TIMELINE_LIMIT])
    events = timeline_events(newest[::-1])

    gpus = []
    if job.slave_id and job.gpu_ids:
        by_index = {
            gpu.index: gpu
            for gpu in Gpu.objects.filter(slave_id=job.slave_id, index__in=list(job.gpu_ids))
        }
        gpus = [{"index": i, "gpu": by_index.get(i)} for i in job.gpu_ids]

    ports = []
    if full and job.slave is not None:
        host = job.slave.host or job.slave.name
        for mapping in job.port_mappings or []:
            if isinstance(mapping, int):
                mapping = {"containerPort": mapping}
            host_port = mapping.get("hostPort")
            ports.append(
                {
                    "container": mapping.get("containerPort"),
                    "host_port": host_port,
                    "url": f"http://{host}:{host_port}" if host_port else None,
                }
            )

    restarted_as = getattr(job, "restarted_as", None) if _has_restarted_as(job) else None
    chain = []
    if job.restart_of_id or restarted_as is not None or job.restart_count:
        initial = job.initial_uuid
        chain = [
            present(other, user, now=now)
            for other in job_list_visible_to(user)
            .filter(Q(uuid=initial) | Q(initial_job_uuid=initial))
            .order_by("restart_count", "created", "id")[:CHAIN_LIMIT]
        ]
    for neighbour in (job.restart_of, restarted_as):
        if neighbour is not None:
            present(neighbour, user, now=now)

    return {
        "job": job,
        "full": full,
        "can_act": can_act,
        "actions": action_buttons(job, user),
        "events": events,
        "hidden_events": max(0, total_events - len(newest)),
        "gpus": gpus,
        "ports": ports,
        "restart_of": job.restart_of,
        "restarted_as": restarted_as,
        "chain": chain,
        "halt_events": list(job.halt_events or []),
        "explanations": [str(x) for x in job.queued_explanations or []],
        "start_estimate": _start_estimate(job, full=full, now=now),
        "is_pending": job.status in PENDING,
        "on_slave": job.status in HOLDS_RESOURCES,
        "is_active": job.status in ACTIVE,
        # The state every second until it runs (the log follows within a second of RUNNING);
        # slower while it runs; not at all once it ended.
        "live_every": "1s" if job.status in STARTS_SOON else "2s",
        "total_run_seconds": (job.run_seconds_before or 0) + (job.ui_run_seconds or 0),
        # What apps above jobs show of it (a task of a multi-task OpenPAI job: its gang's
        # roles x tasks and attempts, from gangs/).
        "sections": job_sections(job, user, full=full),
        "job_uuid": str(job.uuid),
    }


def _start_estimate(job: Job, *, full: bool, now) -> dict | None:
    """The estimate as the API gives it, plus seconds from now for "in 2h" on the page."""
    body = start_estimate_json(job=job, full=full, now=now)
    if body is not None and body["estimated_start"]:
        start = parse_utc_z(body["estimated_start"])
        body["in_s"] = max(0, int((start - now).total_seconds()))
        for item in body["advice"]:
            item["in_s"] = max(0, int((parse_utc_z(item["start"]) - now).total_seconds()))
    return body


def _has_restarted_as(job: Job) -> bool:
    try:
        job.restarted_as  # noqa: B018 - the reverse one-to-one raises when absent
    except Job.DoesNotExist:
        return False
    return True


def _related():
    return ("owner", "project", "slave", "slave__cluster", *DETAIL_RELATED)


@login_required
def job_detail(request, uuid):
    job = visible_job(request.user, uuid, related=_related())
    context = _live_context(request, job)
    gpulab = job_to_gpulab(job, viewer=request.user)
    document = {
        "name": gpulab["name"],
        "description": gpulab["description"],
        "request": gpulab["request"],
    }
    context["document_json"] = json.dumps(document, indent=2, ensure_ascii=False)
    context["log"] = initial_log(job) if context["full"] else None
    context.update(outputs_context(request, job))
    # Tapis stages and status, app origin, resubmissions (jobs/_tapis.html).
    context["tapis"] = job_tapis_summary(job, timezone.now()) if context["full"] else None
    return render(request, "jobs/detail.html", context)


@login_required
def job_live(request, uuid):
    """The polled part of the job page (htmx); stops polling itself once the job is over."""
    job = visible_job(request.user, uuid, related=_related())
    context = _live_context(request, job)
    # The cards outside the polled part, swapped in out of band (jobs/_job_live_poll.html) so
    # none keeps a stale text: the Tapis status on every poll (stages change while the state
    # stays), the outputs once, in the last poll (they are copied as the job ends).
    if context["full"]:
        if not context["is_active"]:
            context.update(outputs_context(request, job))
            context["outputs_changed"] = True
        if job.app_id:
            context["tapis"] = job_tapis_summary(job, timezone.now())
    return render(request, "jobs/_job_live_poll.html", context)


@login_required
@require_http_methods(["GET", "POST"])
def job_action(request, uuid, action):
    """Cancel, halt, hold, release or delete, after a confirmation.

    Without JavaScript the job page's button posts here without ``confirmed`` and gets the
    confirmation page; with JavaScript a dialog asks first and the post carries ``confirmed``.
    """
    job = visible_job(request.user, uuid, related=("owner", "project", "slave"))
    present(job, request.user)
    entry = ACTIONS[action]
    label = entry.label
    # From the jobs table's row actions: back to the same list (only a /jobs/ path).
    back = request.POST.get("next") or request.GET.get("next") or ""
    if not back.startswith("/jobs/?") and back != "/jobs/":
        back = ""
    confirmed = request.POST.get("confirmed") == "1" or not entry.needs_confirmation
    if request.method == "POST" and confirmed:
        try:
            entry.run(job=job, user=request.user)
        except ServiceError as error:
            messages.error(request, f"{label} failed: {error}")
            return redirect("jobs:detail", uuid=job.uuid)
        messages.success(request, entry.done.format(name=job.ui_name))
        whole = None if entry.deletes else whole_gang_info(job, entry.label)
        if whole is not None:  # the whole multi-task job was acted on
            messages.info(request, whole)
        if back:
            return redirect(back)
        if entry.deletes:
            return redirect("jobs:list")
        return redirect("jobs:detail", uuid=job.uuid)

    if not job_can_act(request.user, job, delete=entry.deletes):
        return render(
            request,
            "jobs/confirm.html",
            {"job": job, "forbidden": True, "label": label},
            status=403,
        )
    return render(
        request,
        "jobs/confirm.html",
        {
            "job": job,
            "action": action,
            "label": label,
            "question": entry.question.format(name=job.ui_name),
            "allowed": entry.state_allows(job),
            "next": back,
        },
    )


# --- the outputs table and the share form -----------------------------------------------------

OUTPUT_ROWS = 200


def outputs_context(request, job: Job) -> dict:
    """What the two include templates show: the output files (readers only) and the shares
    (the job's project and admins; the owner gets the form)."""
    user = request.user
    context: dict[str, Any] = {
        "outputs": None,
        "outputs_note": "",
        "shares": None,
        "may_share": False,
    }
    if job_sees_full(user, job):
        try:
            rows = job_outputs_list(job=job, user=user, recursive=True)
            context["outputs"] = [r for r in rows if r["type"] != "dir"][:OUTPUT_ROWS]
        except ServiceError as error:
            context["outputs_note"] = str(error)
    try:
        context["shares"] = job_shares_list(job=job, user=user)
        context["may_share"] = user.pk == job.owner_id
    except NotAllowed:
        pass
    return context


@login_required
def job_output_download(request, uuid):
    job = visible_job(request.user, uuid, related=("owner", "project"))
    try:
        return job_output_response(
            job=job,
            user=request.user,
            path=request.GET.get("path", ""),
            as_zip=request.GET.get("zip") in ("1", "true"),
        )
    except ServiceError as error:
        return HttpResponse(str(error), status=error.status_code, content_type="text/plain")


@login_required
@require_POST
def job_share_add(request, uuid):
    job = visible_job(request.user, uuid, related=("owner", "project"))
    share_add_from_form(
        request, what="Job", create=partial(job_share_create, job=job, user=request.user)
    )
    return redirect("jobs:detail", uuid=job.uuid)


@login_required
@require_POST
def job_share_remove(request, uuid, share_id):
    job = visible_job(request.user, uuid, related=("owner", "project"))
    share = JobShare.objects.filter(job=job, pk=share_id).select_related("job").first()
    share_revoke_from_form(request, share, revoke=partial(job_share_revoke, user=request.user))
    return redirect("jobs:detail", uuid=job.uuid)


# --- The timeline ---------------------------------------------------------------------------
# The job page's timeline: which events it lists and how precisely it times them.
#
# - Times to the second where events are close together (the time rule, core/templatetags/
#   portal_ui.usertime's "seconds" style): an event that shares its minute with the event before
#   or after it shows its seconds, so five events of one minute no longer all read "21:38".
# - Archiving once: the ARCHIVING stage ("copying the output folder") and its result ("outputs
#   archived: ..." or a warning that they were not) are one step of the job's end; the list shows
#   the result under the stage's name, not the two lines.

# The messages jobs.execution.outputs.job_outputs_archive ends the ARCHIVING stage with.
ARCHIVE_RESULTS = ("outputs archived:", "outputs not copied:", "outputs: ")


def _minute(event: JobEvent):
    return event.time.replace(second=0, microsecond=0)


def timeline_events(events: Sequence[JobEvent]) -> list[JobEvent]:
    """``events`` (oldest first) as the timeline lists them, each with ``ui_label`` (the event's
    type; ARCHIVING for the archive's result) and ``ui_style`` (usertime's style)."""
    shown: list[JobEvent] = []
    archiving: JobEvent | None = None
    for event in events:
        if event.stage == Stage.ARCHIVING:
            archiving = event
            shown.append(event)
            continue
        if archiving is not None and event.message.startswith(ARCHIVE_RESULTS):
            if archiving in shown:
                shown.remove(archiving)
            event.ui_label = Stage.ARCHIVING.value
            shown.append(event)
            continue
        shown.append(event)
    for event in shown:
        if not hasattr(event, "ui_label"):
            event.ui_label = event.type
    for i, event in enumerate(shown):
        near = [shown[j] for j in (i - 1, i + 1) if 0 <= j < len(shown)]
        close = any(_minute(other) == _minute(event) for other in near)
        event.ui_style = "seconds" if close else "datetime"
    return shown
