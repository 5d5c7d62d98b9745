"""The job page's outputs table and share form (templates/jobs/_job_outputs.html,
_job_shares.html), with their download and share/revoke routes. Rules live in
``jobs.execution.outputs`` and ``jobs.user_actions.shares``; these views only call them. (The job's
subscriptions and deliveries are the notifications app's section of the page.)"""

from functools import partial
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from core.errors import NotAllowed, ServiceError
from jobs.execution.outputs import job_output_response, job_outputs_list
from jobs.models import Job, JobShare
from jobs.selectors import job_sees_full
from jobs.user_actions.shares import (
    job_share_create,
    job_share_revoke,
    job_shares_list,
)
from jobs.web.share_forms import share_add_from_form, share_revoke_from_form
from jobs.web.views.common import visible_job

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
