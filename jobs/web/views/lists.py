"""The job list: filters, search, pagination, and a partial that htmx polls while any shown job
is active."""

from dataclasses import replace

from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.vary import vary_on_headers

from accounts.models import Project
from accounts.permissions import may_view_all_jobs
from clusters.models import Cluster
from jobs.actions.bulk import (
    BULK_ACTIONS,
    BULK_LABELS,
    DEFAULT_PAGE_SIZE,
    PAGE_SIZES,
    queue_positions,
)
from jobs.actions.registry import actions_allowed
from jobs.selectors import job_can_act, job_list_visible_to, project_ids_of
from jobs.web.forms import JobFilterForm
from jobs.web.page_hooks import job_rows_annotate
from jobs.web.views.common import present

PAGE_SIZE = DEFAULT_PAGE_SIZE

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
