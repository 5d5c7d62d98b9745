"""The job list: filters, search, pagination, and a partial that htmx polls while any shown job
is active; and its bulk actions (``job_bulk``): cancel, hold, release or delete the selected jobs.

The table's form posts the selection to ``job_bulk``; the answer is a confirmation page listing
each job and what will happen to it (refusals known beforehand marked); confirming runs every
job through its own service and shows each outcome, refusals included, one line per job.
"""

import uuid
from dataclasses import replace

from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_POST
from django.views.decorators.vary import vary_on_headers

from accounts.models import Project
from accounts.permissions import may_view_all_jobs
from clusters.models import Cluster
from jobs.selectors import job_can_act, job_list_visible_to, project_ids_of, queue_positions
from jobs.user_actions.registry import (
    BULK_ACTIONS,
    BULK_LABELS,
    BULK_LIMIT,
    actions_allowed,
    job_bulk_act,
    job_bulk_preview,
)
from jobs.web.forms import JobFilterForm
from jobs.web.page_hooks import job_rows_annotate
from jobs.web.views.common import present

PAGE_SIZES = (25, 50, 100, BULK_LIMIT)  # a whole page can be acted on at once
PAGE_SIZE = 25

# Sortable columns of the table: (sort key, header); jobs.selectors.SORTS orders by them.
COLUMNS = [
    ("state", "State"),
    ("name", "Job"),
    ("project", "Project"),
    ("owner", "Owner"),
    ("gpus", "Resources"),
    ("created", "Created"),
    ("started", "Ran"),
    ("exit", "Exit"),
    ("queue", "Queue"),
]


def page_size(request) -> int:
    try:
        size = int(request.GET.get("per_page", PAGE_SIZE))
    except ValueError:
        return PAGE_SIZE
    return size if size in PAGE_SIZES else PAGE_SIZE


def sort_headers(current: str) -> list[dict]:
    """Each column's header: its sort key, direction now, and the key a click asks for."""
    headers = []
    for key, label in COLUMNS:
        direction = "asc" if current == key else "desc" if current == "-" + key else ""
        # Times and numbers first click: newest/largest first; words: A to Z.
        first = "-" + key if key in ("created", "started", "gpus", "exit") else key
        next_key = {"asc": "-" + key, "desc": key}.get(direction, first)
        headers.append({"key": key, "label": label, "direction": direction, "next": next_key})
    return headers


@login_required
@vary_on_headers("HX-Request")
def job_list(request):
    user = request.user
    admin = may_view_all_jobs(user)
    projects = list(Project.objects.order_by("name") if admin else _my_projects(user))
    clusters = list(Cluster.objects.order_by("id"))
    form = JobFilterForm(request.GET or None, projects=projects, clusters=clusters)
    # One JobFilter (shared with the API) filters and orders; it holds the privacy rule: name,
    # user and project filters and sorts only reach jobs the viewer sees in full.
    # A multi-task OpenPAI job is one row here (its first task; the gangs app adds the gang's
    # task counts through jobs.web.page_hooks).
    job_filter = replace(form.job_filter(), one_row_per_gang=True)
    queryset = job_filter.order(
        job_filter.apply(job_list_visible_to(user), viewer=user), viewer=user
    )
    size = page_size(request)
    page = Paginator(queryset, size).get_page(request.GET.get("page"))
    now = timezone.now()
    jobs = [present(job, user, now=now) for job in page.object_list]
    job_rows_annotate(jobs)
    positions = queue_positions(jobs)
    for job in jobs:
        job.ui_queue_position = positions.get(job.pk)
        job.ui_actions = [a.name for a in actions_allowed(job, user)]
        job.ui_can_act = job_can_act(user, job)
    sort = job_filter.sort
    context = {
        "form": form,
        "headers": sort_headers(sort),
        "sort": sort,
        "per_page": size,
        "page_sizes": PAGE_SIZES,
        "bulk_actions": [(name, BULK_LABELS[name][0]) for name in BULK_ACTIONS],
        "page": page,
        "jobs": jobs,
        "any_active": any(job.ui_active for job in jobs),
        "usernames": _known_usernames(user, admin),
        "filtered": bool(
            request.GET.get("q")
            or any(request.GET.get(k) for k in ("state", "project", "user", "cluster", "mine"))
        ),
    }
    if request.headers.get("HX-Request"):
        return render(request, "jobs/_job_table.html", context)
    return render(request, "jobs/list.html", context)


def _my_projects(user):
    return Project.objects.filter(memberships__user=user).order_by("name")


def _known_usernames(user, admin: bool) -> list[str]:
    """Usernames for the user filter's suggestions: the members of the viewer's projects."""
    users = get_user_model().objects.order_by("username")
    if not admin:
        users = users.filter(memberships__project_id__in=project_ids_of(user)).distinct()
    return list(users.values_list("username", flat=True)[:200])


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
