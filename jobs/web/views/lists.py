"""The job list: filters, search, pagination, and a partial that htmx polls while any shown job
is active; and its bulk actions (``job_bulk``): cancel, hold, release or delete the selected jobs.

The table's form posts the selection to ``job_bulk``; the answer is a confirmation page listing
each job and what will happen to it (refusals known beforehand marked); confirming runs every
job through its own service and shows each outcome, refusals included, one line per job.

A sweep (the jobs of one array submission, ``Job.array_id``) is one row of the list with its
counts by state, expandable to its jobs (``?sweep=<id>``, which static/js/sweep-list.js fetches
into the table), and is acted on as a whole: ``job_bulk`` takes ``sweeps`` beside ``jobs``.
"""

import uuid
from dataclasses import replace
from os.path import commonprefix

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Count, Max, Min
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_http_methods
from django.views.decorators.vary import vary_on_headers

from accounts.models import Project
from accounts.permissions import may_view_all_jobs
from clusters.models import Cluster
from jobs.selectors import (
    EVERY_STATE_BUT_DELETED,
    job_can_act,
    job_list_visible_to,
    project_ids_of,
    queue_positions,
)
from jobs.states import ACTIVE, JobStatus
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
    sweep = _valid_uuids([request.GET.get("sweep", "")])
    sweep_id = sweep[0] if sweep else None
    # A sweep is one row, unless the list is narrowed to one sweep: then its jobs are listed.
    job_filter = replace(
        form.job_filter(),
        one_row_per_gang=True,
        array_id=sweep_id,
        one_row_per_array=sweep_id is None,
    )
    queryset = job_filter.order(
        job_filter.apply(job_list_visible_to(user), viewer=user), viewer=user
    )
    size = page_size(request)
    page = Paginator(queryset, size).get_page(request.GET.get("page"))
    now = timezone.now()
    jobs = [present(job, user, now=now) for job in page.object_list]
    job_rows_annotate(jobs)
    sweeps = sweep_summaries(user, {job.array_id for job in jobs if job.array_id})
    for job in jobs:
        job.ui_sweep = sweeps.get(job.array_id) if sweep_id is None else None
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
        # A sweep's row is polled while any job of it is active, not only its first one.
        "any_active": any(job.ui_active or (job.ui_sweep or {}).get("active") for job in jobs),
        "any_sweep": any(job.ui_sweep for job in jobs),
        "usernames": _known_usernames(user, admin),
        "filtered": bool(
            request.GET.get("q")
            or any(
                request.GET.get(k) for k in ("state", "project", "user", "cluster", "mine", "sweep")
            )
        ),
        "sweep": sweeps.get(uuid.UUID(sweep_id)) if sweep_id else None,
        "sweep_id": sweep_id,
    }
    if request.headers.get("HX-Request"):
        return render(request, "jobs/_job_table.html", context)
    return render(request, "jobs/list.html", context)


def sweep_summaries(user, array_ids) -> dict:
    """Per array id: ``{id, count, counts_text, label}`` over the sweep's jobs ``user`` sees
    (deleted ones left out), in one query. The label is what the jobs' names share (the
    first and last name in order share what every name does), or ``sweep``."""
    if not array_ids:
        return {}
    rows = (
        job_list_visible_to(user)
        .filter(array_id__in=sorted(array_ids), status__in=sorted(EVERY_STATE_BUT_DELETED))
        .values("array_id", "status")
        .annotate(n=Count("id"), first=Min("name"), last=Max("name"))
    )
    summaries: dict = {}
    for row in rows:
        summary = summaries.setdefault(
            row["array_id"], {"id": row["array_id"], "count": 0, "counts": {}, "names": []}
        )
        summary["count"] += row["n"]
        summary["counts"][row["status"]] = row["n"]
        summary["names"] += [row["first"], row["last"]]
    order = list(JobStatus)
    for summary in summaries.values():
        names = sorted(summary.pop("names"))
        shared = commonprefix([names[0], names[-1]])
        summary["label"] = shared.rstrip("-_ .") or "sweep"
        counts = sorted(summary["counts"].items(), key=lambda item: order.index(item[0]))
        summary["counts"] = counts
        summary["counts_text"] = ", ".join(f"{n} {status.lower()}" for status, n in counts)
        summary["active"] = any(status in ACTIVE for status, _n in counts)
    return summaries


def _my_projects(user):
    return Project.objects.filter(memberships__user=user).order_by("name")


def _known_usernames(user, admin: bool) -> list[str]:
    """Usernames for the user filter's suggestions: the members of the viewer's projects."""
    users = get_user_model().objects.order_by("username")
    if not admin:
        users = users.filter(memberships__project_id__in=project_ids_of(user)).distinct()
    return list(users.values_list("username", flat=True)[:200])


@login_required
@require_http_methods(["GET", "POST"])
def job_bulk(request):
    """POST: the table's selection; GET (a sweep row's action links): the confirmation only,
    nothing is done without a POST that confirms."""
    user = request.user
    data = request.POST if request.method == "POST" else request.GET
    action = data.get("action", "")
    uuids = data.getlist("jobs")
    sweep_ids = _valid_uuids(data.getlist("sweeps"))
    back = data.get("back") or ""
    if not back.startswith("/jobs/") or back.startswith("//"):
        back = "/jobs/"  # only back to the list (no open redirect through this field)
    errors = []
    if action not in BULK_ACTIONS:
        errors.append(f"action: must be one of {', '.join(BULK_ACTIONS)}")
    if not uuids and not sweep_ids:
        errors.append("jobs: select at least one job")
    elif len(uuids) > BULK_LIMIT:
        errors.append(f"jobs: at most {BULK_LIMIT} jobs at once")
    jobs = []
    if not errors:
        visible = job_list_visible_to(user).select_related("owner", "project", "slave")
        found = {str(job.uuid): job for job in visible.filter(uuid__in=_valid_uuids(uuids))}
        # A sweep as a whole: every job of it that is not deleted (an array holds at most
        # PORTAL_ARRAY_MAX_JOBS, more than a page of the table can select).
        in_sweeps = (
            visible.filter(array_id__in=sweep_ids)
            .exclude(status=JobStatus.DELETED)
            .order_by("id")[: settings.PORTAL_ARRAY_MAX_JOBS * len(sweep_ids)]
        )
        found.update((str(job.uuid), job) for job in in_sweeps)
        wanted = dict.fromkeys([*uuids, *(str(job.uuid) for job in in_sweeps)])
        jobs = [present(found[u], user) for u in wanted if u in found]
        if not jobs:
            errors.append("jobs: none of the selected jobs exists")
    context = {
        "action": action,
        "label": BULK_LABELS.get(action, ("", ""))[0],
        "back": back,
        "errors": errors,
        # The confirmation posts the selection as it came: the sweeps by id, not job by job.
        "selected_jobs": list(dict.fromkeys(uuids)),
        "sweep_ids": sweep_ids,
    }
    if errors:
        return render(request, "jobs/bulk.html", context, status=400)
    if request.method == "POST" and request.POST.get("confirmed") == "1":
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
