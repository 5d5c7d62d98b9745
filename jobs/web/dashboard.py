"""Dashboard (home) and usage pages: the user's jobs, the clusters' free GPUs, fair share."""

from django.contrib.auth.decorators import login_required
from django.db.models import Count, Q
from django.shortcuts import render
from django.utils import timezone

from jobs.api.cluster_json import cluster_infos
from jobs.models import Job
from jobs.states import ACTIVE, FINISHED, PENDING
from jobs.web.usage import fair_share, usage_page_data
from jobs.web.views.common import present

DASHBOARD_ACTIVE_LIMIT = 50
DASHBOARD_RECENT = 5


@login_required
def home(request):
    user = request.user
    now = timezone.now()
    active_qs = Job.objects.filter(owner=user, status__in=ACTIVE).select_related(
        "owner", "project", "slave", "slave__cluster", "explanation"
    )
    active = [
        present(job, user, now=now)
        for job in active_qs.order_by("-created", "-id")[:DASHBOARD_ACTIVE_LIMIT]
    ]
    recent = [
        present(job, user, now=now)
        for job in Job.objects.filter(owner=user, status__in=FINISHED)
        .select_related("owner", "project", "slave")
        .order_by("-status_updated", "-id")[:DASHBOARD_RECENT]
    ]
    counts = active_qs.order_by().aggregate(
        total=Count("id"), waiting=Count("id", filter=Q(status__in=PENDING))
    )
    clusters = cluster_infos(viewer=user)
    return render(
        request,
        "portal/home.html",
        {
            "active": active,
            "active_total": counts["total"],
            "waiting_total": counts["waiting"],
            "on_slave_total": counts["total"] - counts["waiting"],
            "running": [j for j in active if j.status not in PENDING],
            "queued": [j for j in active if j.status in PENDING],
            "recent": recent,
            "clusters": clusters,
            "free_gpus": sum(c["gpu"]["available"] for c in clusters),
            "total_gpus": sum(c["gpu"]["acquired"] for c in clusters),
            "fair": fair_share(user),
            "any_active": bool(active),
        },
    )


@login_required
def usage(request):
    data = usage_page_data(request.user, now=timezone.now())
    return render(request, "portal/usage.html", data)
