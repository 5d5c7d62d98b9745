"""Resubmit a multi-task OpenPAI job as a copy from its job page (the gang section's button;
the API's POST /api/portal/gangs/<id>/resubmit does the same: gangs.resubmit)."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from core.errors import FieldErrors, ServiceError
from gangs.models import JobGang
from gangs.resubmit import gang_resubmit
from jobs.web.views.common import present, visible_job


@login_required
@require_POST
def job_gang_resubmit(request, uuid):
    job = visible_job(request.user, uuid, related=("owner", "project"))
    present(job, request.user)
    if not job.gang_id or not job.ui_full:  # a task of a job the user sees in full only
        raise Http404("no such multi-task job")
    gang = JobGang.objects.get(pk=job.gang_id)
    try:
        first = gang_resubmit(user=request.user, gang=gang)
    except (ServiceError, FieldErrors) as error:
        messages.error(request, f"Resubmit failed: {error}")
        return redirect("jobs:detail", uuid=job.uuid)
    assert first.gang is not None  # the first task of the copy
    messages.success(request, f"Resubmitted as a copy: OpenPAI job {first.gang.name}.")
    return redirect("jobs:detail", uuid=first.uuid)
