"""Bulk actions from the jobs table: cancel, hold, release or delete the selected jobs.

The table's form posts the selection here; the answer is a confirmation page listing each job
and what will happen to it (refusals known beforehand marked); confirming runs every job
through its own service and shows each outcome, refusals included, one line per job.
"""

import uuid

from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.views.decorators.http import require_POST

from jobs.actions.bulk import BULK_ACTIONS, BULK_LABELS, BULK_LIMIT, job_bulk_act, job_bulk_preview
from jobs.selectors import job_list_visible_to
from jobs.web.views.common import present


@login_required
@require_POST
def job_bulk(request):
    user = request.user
    action = request.POST.get("action", "")
    uuids = request.POST.getlist("jobs")
    back = request.POST.get("back") or ""
    if not back.startswith("/jobs/") or back.startswith("//"):
        back = "/jobs/"  # only back to the list (no open redirect through this field)
    errors = []
    if action not in BULK_ACTIONS:
        errors.append(f"action: must be one of {', '.join(BULK_ACTIONS)}")
    if not uuids:
        errors.append("jobs: select at least one job")
    elif len(uuids) > BULK_LIMIT:
        errors.append(f"jobs: at most {BULK_LIMIT} jobs at once")
    jobs = []
    if not errors:
        found = {
            str(job.uuid): job
            for job in job_list_visible_to(user)
            .select_related("owner", "project", "slave")
            .filter(uuid__in=_valid_uuids(uuids))
        }
        jobs = [present(found[u], user) for u in dict.fromkeys(uuids) if u in found]
        if not jobs:
            errors.append("jobs: none of the selected jobs exists")
    context = {
        "action": action,
        "label": BULK_LABELS.get(action, ("", ""))[0],
        "back": back,
        "errors": errors,
    }
    if errors:
        return render(request, "jobs/bulk.html", context, status=400)
    if request.POST.get("confirmed") == "1":
        outcomes = job_bulk_act(jobs=jobs, user=user, action=action)
        context.update(outcomes=outcomes, done=True)
    else:
        outcomes = job_bulk_preview(jobs=jobs, user=user, action=action)
        context.update(outcomes=outcomes, done=False)
    context["ok_count"] = sum(1 for o in outcomes if o.done)
    context["refused_count"] = len(outcomes) - context["ok_count"]
    return render(request, "jobs/bulk.html", context)


def _valid_uuids(values: list[str]) -> list[str]:
    valid = []
    for value in values:
        try:
            valid.append(str(uuid.UUID(value)))
        except ValueError:
            continue
    return valid
