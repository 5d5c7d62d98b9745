"""The job list: filters, search, pagination, and a partial that htmx polls while any shown job
is active."""

from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.vary import vary_on_headers

from accounts.models import Project
from accounts.permissions import may_view_all_jobs
from clusters.models import Cluster
from jobs.selectors import job_list_visible_to, project_ids_of
from jobs.web.forms import JobFilterForm
from jobs.web.views.common import present

PAGE_SIZE = 25


@login_required
@vary_on_headers("HX-Request")
def job_list(request):
    user = request.user
    admin = may_view_all_jobs(user)
    projects = list(Project.objects.order_by("name") if admin else _my_projects(user))
    clusters = list(Cluster.objects.order_by("id"))
    form = JobFilterForm(request.GET or None, projects=projects, clusters=clusters)
    # JobFilter (shared with the API) holds the privacy rule: name, user and project filters
    # only reach jobs the viewer sees in full.
    queryset = (
        form.job_filter().apply(job_list_visible_to(user), viewer=user).order_by("-created", "-id")
    )
    page = Paginator(queryset, PAGE_SIZE).get_page(request.GET.get("page"))
    now = timezone.now()
    jobs = [present(job, user, now=now) for job in page.object_list]
    context = {
        "form": form,
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
