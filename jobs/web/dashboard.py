"""Dashboard (home) and usage pages: the user's jobs, the clusters' free GPUs, fair share.

Data of the Usage page: GPU-hours per day (the viewer's and their projects'), decayed
fair-share usage against everyone else's (anonymised), and the heaviest jobs.

The numbers agree with each other: the fair share is the scheduler's usage at this instant
(running jobs included, like the chart), and every figure and bar is drawn from the numbers as
printed (tests/web/test_usage_consistency.py).

A fixed number of queries: the jobs that ran in the window are read once (one row each, few
columns) and split into days in Python.
"""

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.db.models import Count, Q
from django.shortcuts import render
from django.utils import timezone

from accounts.models import Project
from accounts.selectors import project_ids_of, projects_of
from jobs.api.clusters import cluster_infos
from jobs.models import Job, StartEstimate, UserUsage
from jobs.scheduler_bridge.quota_usage import quota_standing
from jobs.scheduler_bridge.snapshot import scheduler_config
from jobs.scheduler_bridge.usage import RUN_FIELDS, runs_ended_since_accrual, usage_pending
from jobs.spec import format_duration
from jobs.states import ACTIVE, FINISHED, HOLDS_RESOURCES, PENDING, JobStatus
from jobs.submit.estimates import start_estimate_current
from jobs.web.live import reserved_gpus_by_cluster, with_reserved
from jobs.web.views.common import present
from quotas.selectors import month_end, quotas_in_force

DASHBOARD_ACTIVE_LIMIT = 50
DASHBOARD_RECENT = 5
# Start estimates simulated per dashboard render (the page is polled every 5 s): the others
# show their stored estimate until their turn comes, so a long queue costs one simulation.
DASHBOARD_ESTIMATES_MADE = 1


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
    queued = [j for j in active if j.status in PENDING]
    _attach_estimates(queued, now=now)
    clusters = with_reserved(cluster_infos(viewer=user), reserved_gpus_by_cluster(user, now=now))
    return render(
        request,
        "portal/home.html",
        {
            "active": active,
            "active_total": counts["total"],
            "waiting_total": counts["waiting"],
            "on_slave_total": counts["total"] - counts["waiting"],
            "running": [j for j in active if j.status not in PENDING],
            "queued": queued,
            "recent": recent,
            "clusters": clusters,
            "free_gpus": sum(c["ui_free"] for c in clusters),
            "reserved_gpus": sum(c["ui_reserved"] for c in clusters),
            "total_gpus": sum(c["gpu"]["acquired"] for c in clusters),
            "fair": fair_share(user),
            "limits": limits_card(user, now=now),
            "any_active": bool(active),
        },
    )


def _attach_estimates(queued: list[Job], *, now: datetime) -> None:
    """``ui_estimate`` (the StartEstimate row or None) and ``ui_estimate_in_s`` on each QUEUED
    job: the stored rows in one query; a missing or stale one is made anew, at most
    ``DASHBOARD_ESTIMATES_MADE`` per render (jobs.submit.estimates, as the job page does)."""
    waiting = [j for j in queued if j.status == JobStatus.QUEUED]
    rows = {e.job_id: e for e in StartEstimate.objects.filter(job__in=[j.pk for j in waiting])}
    made = 0
    for job in waiting:
        row = rows.get(job.pk)
        stale = row is None or (now - row.made_at).total_seconds() >= settings.PORTAL_ESTIMATE_TTL_S
        if stale and made < DASHBOARD_ESTIMATES_MADE:
            made += 1
            row = start_estimate_current(job=job, now=now) or row
        job.ui_estimate = row
        job.ui_estimate_in_s = (
            max(0, int((row.start - now).total_seconds())) if row and row.start else None
        )


@login_required
def usage(request):
    data = usage_page_data(request.user, now=timezone.now())
    return render(request, "portal/usage.html", data)


# --- the data of the Usage page ---------------------------------------------------------------

DAYS = 30
TOP_JOBS = 10
TOP_USERS = 20
# Chart geometry (SVG user units; the SVG scales to its container).
CHART_W, CHART_H, CHART_PAD_TOP = 600, 150, 12


@dataclass
class Series:
    label: str
    per_day: list[float]
    total: float = 0.0
    bars: list[dict] = field(default_factory=list)
    max_value: float = 0.0


def _split(start: datetime, end: datetime, days: list[datetime], per_day: list[float], gpus: int):
    """Add gpus x hours of [start, end) to the days it overlaps."""
    for i, day in enumerate(days):
        day_end = day + timedelta(days=1)
        # Timestamps: two times of one zone would subtract as wall clocks (wrong on a DST day).
        overlap = min(end, day_end).timestamp() - max(start, day).timestamp()
        if overlap > 0:
            per_day[i] += gpus * overlap / 3600


def _chart(series: Series, days: list[datetime]) -> Series:
    peak = max(series.per_day) if series.per_day else 0.0
    series.max_value = peak
    series.total = sum(series.per_day)
    slot = CHART_W / len(days)
    usable = CHART_H - CHART_PAD_TOP
    bars = []
    for i, (day, value) in enumerate(zip(days, series.per_day, strict=True)):
        height = usable * value / peak if peak > 0 else 0
        if value > 0:
            height = max(height, 1.5)
        bars.append(
            {
                "x": f"{i * slot + slot * 0.15:.1f}",
                "y": f"{CHART_H - height:.1f}",
                "w": f"{slot * 0.7:.1f}",
                "h": f"{height:.1f}",
                "day": day,
                "value": value,
                "label_x": f"{i * slot + (0 if i == 0 else slot if i == len(days) - 1 else slot / 2):.1f}",
                "show_label": i % 5 == 0 or i == len(days) - 1,
                "anchor": "start" if i == 0 else "end" if i == len(days) - 1 else "middle",
            }
        )
    series.bars = bars
    return series


def usage_page_data(user, *, now: datetime) -> dict:
    # Days begin at midnight in the viewer's zone (the one time rule), as on Reservations. The
    # arithmetic is on wall-clock time, so a day with a DST change lasts 23 or 25 hours.
    local_now = timezone.localtime(now)
    today = local_now.replace(hour=0, minute=0, second=0, microsecond=0)
    days = [(today - timedelta(days=DAYS - 1 - i)).replace(tzinfo=None) for i in range(DAYS)]
    days = [timezone.make_aware(day, local_now.tzinfo) for day in days]
    since = days[0]
    project_ids = project_ids_of(user)
    projects = list(Project.objects.filter(pk__in=project_ids).order_by("name"))

    rows = (
        Job.objects.filter(Q(owner=user) | Q(project_id__in=project_ids))
        .filter(started_at__isnull=False, started_at__lt=now)
        .filter(Q(ended_at__isnull=True) | Q(ended_at__gt=since))
        .values_list(
            "uuid",
            "name",
            "owner_id",
            "project_id",
            "gpus",
            "status",
            "started_at",
            "ended_at",
            "status_updated",
        )
    )
    mine = [0.0] * DAYS
    per_project = {p.pk: [0.0] * DAYS for p in projects}
    heaviest = []
    for uuid, name, owner_id, project_id, gpus, status, started, ended, updated in rows:
        end = min(
            Job.run_end_of(status=status, ended_at=ended, status_updated=updated, now=now) or now,
            now,
        )
        assert started is not None  # filtered: started_at__isnull=False
        start = max(started, since)
        if end <= start or not gpus:
            continue
        hours = gpus * (end - start).total_seconds() / 3600
        if owner_id == user.pk:
            _split(start, end, days, mine, gpus)
        if project_id in per_project:
            _split(start, end, days, per_project[project_id], gpus)
        heaviest.append(
            {
                "uuid": uuid,
                "name": name,
                "mine": owner_id == user.pk,
                "project_id": project_id,
                "gpus": gpus,
                "status": status,
                "gpu_hours": hours,
                "started": started,
            }
        )
    heaviest.sort(key=lambda j: j["gpu_hours"], reverse=True)
    names = {p.pk: p.name for p in projects}
    for job in heaviest[:TOP_JOBS]:
        job["project"] = names.get(job["project_id"], "")

    series = [_chart(Series("Me", mine), days)] + [
        _chart(Series(f"Project {p.name}", per_project[p.pk]), days) for p in projects
    ]
    return {
        "days": days,
        "series": series,
        "top_jobs": heaviest[:TOP_JOBS],
        "fair_share": fair_share(user, now=now),
        "chart_w": CHART_W,
        "chart_h": CHART_H,
        "chart_pad_top": CHART_PAD_TOP,
    }


def usage_values(*, now: datetime, config) -> dict[int, float]:
    """Every user's fair-share usage at ``now`` (user id -> weighted GPU-seconds), as the
    scheduler would compute it in a tick now: the stored values decayed to ``now``, plus what
    the running jobs, and the runs that ended since, added after their owner's row was last
    brought up to date (``jobs.scheduler_bridge.usage.usage_pending``). Reads only.

    Without that share the page showed the value of the last tick, behind the chart of
    GPU-hours (which counts running jobs up to now and every run, however short). Three queries.
    """
    stored = UserUsage.objects.values_list("user_id", "value", "updated_at")
    running = Job.objects.filter(status__in=HOLDS_RESOURCES, started_at__isnull=False).values(
        *RUN_FIELDS
    )
    return usage_pending(
        now=now,
        config=config,
        stored=stored,
        runs=[*running, *runs_ended_since_accrual(now)],
        key="owner_id",
    )


def _hours(value: float) -> float:
    """Weighted GPU-seconds as the hours the page prints (2 decimals): bars are drawn from
    these same numbers, so a "0.00 h" never gets a visible bar."""
    return round(value / 3600, 2)


def fair_share(user, *, now: datetime | None = None) -> dict:
    """The viewer's decayed usage against everyone's: rank 1 is the least used (starts first).

    Others are anonymised as "user N" by rank. Three queries.
    """
    now = now or timezone.now()
    config = scheduler_config()
    values = usage_values(now=now, config=config)
    own = values.pop(user.pk, 0.0)
    total = len(values) + 1
    rank = sum(1 for v in values.values() if v < own) + 1
    top = sorted(values.items(), key=lambda item: (-item[1], item[0]))[:TOP_USERS]
    entries: list[dict[str, Any]] = [
        {"label": None, "value": v, "me": False} for _user_id, v in top
    ]
    entries.append({"label": "you", "value": own, "me": True})
    entries.sort(key=lambda e: (-e["value"], not e["me"]))
    for entry in entries:
        entry["gpu_hours"] = _hours(entry["value"])
    peak = max(e["gpu_hours"] for e in entries)
    number = 0
    for entry in entries:
        if not entry["me"]:
            number += 1
            entry["label"] = f"user {number}"
        entry["percent"] = round(100 * entry["gpu_hours"] / peak, 1) if peak > 0 else 0.0
    return {
        "half_life": format_duration(settings.PORTAL_USAGE_HALF_LIFE_S),
        "weights": {
            "gpu": config.gpu_weight,
            "cpu": config.cpu_weight,
            "mem_gb": config.mem_gb_weight,
        },
        "value": own,
        "gpu_hours": _hours(own),
        "rank": rank,
        "total": total,
        "entries": entries,
        "others_shown": len(top),
    }


# --- Your limits this month ----------------------------------------------------------------
# The dashboard's card "Your limits this month": per scope that limits the viewer (theirs, each
# of their projects', theirs within a project), one bar per limit that is set, drawn against the
# hard level with the soft level marked (issue 29 item 3; docs/quotas.md).
#
# The numbers are the standing's (``jobs.scheduler_bridge.quota_usage.quota_standing``, the one
# the REST endpoint and Create Job answer with), so the card, the endpoint and the scheduler agree.

# Projects looked at per render (the dashboard is polled): three queries each.
MAX_PROJECTS = 10
# (standing key, label, unit after the numbers, what is counted)
LIMIT_ROWS = (
    ("gpus", "GPUs at once", "", "held"),
    ("jobs", "Jobs at once", "", "running"),
    ("gpu_hours", "GPU-hours this month", " h", "used"),
    ("cpu_hours", "CPU-hours this month", " h", "used"),
    ("mem_gb_hours", "Memory GB-hours this month", " GB·h", "used"),
)


def scope_title(row: dict, user: str) -> str:
    if row["scope"] == "member":
        return f"You ({user}) in project {row['project']}"
    if row["scope"] == "user":
        return f"You ({user}), in every project"
    return f"Project {row['project']} (all its members)"


def _number(value: float) -> str:
    return f"{round(value, 1):g}"


def limit_bars(row: dict) -> list[dict]:
    """One bar per limit of a standing row that has a hard or a soft level: the value against
    the hard level (the soft one when there is no hard), the soft level as a mark, and the
    state: ``over`` (at or past the hard level), ``soft`` (past the soft), ``ok``."""
    bars = []
    for name, label, unit, counted in LIMIT_ROWS:
        level = row[name]
        hard, soft = level["hard"], level["soft"]
        if hard is None and soft is None:
            continue
        value = float(level[counted])
        scale = hard if hard is not None else soft
        percent = 100.0 if not scale else min(100.0, 100.0 * value / scale)
        state = "ok"
        if hard is not None and value >= hard:
            state = "over"
        elif soft is not None and value > soft:
            state = "soft"
        text = f"{_number(value)}{unit} {counted}"
        if hard is not None:
            text += f" of {_number(hard)}"
        if soft is not None:
            text += f" (soft {_number(soft)})"
        may_use = level.get("running_may_use") or 0.0
        bars.append(
            {
                "name": name,
                "label": label,
                "text": text,
                "running_may_use": _number(may_use) if may_use else "",
                "percent": round(percent, 1),
                "soft_percent": (
                    round(min(100.0, 100.0 * soft / scale), 1)
                    if soft is not None and scale
                    else None
                ),
                "state": state,
            }
        )
    return bars


def limits_card(user, *, now: datetime) -> dict | None:
    """The card's scopes and when the hour budgets renew; None when no limit applies to the
    viewer (one query then). A scope met in several projects (the viewer's own) is shown once."""
    names = list(projects_of(user).values_list("name", flat=True)[:MAX_PROJECTS])
    if not quotas_in_force(projects=names, users=[user.username]):
        return None
    scopes: dict[tuple, dict] = {}
    for name in names:
        standing = quota_standing(user=user.username, project=name, now=now)
        for row in standing["limits"]:
            key = (row["scope"], row["project"], row["user"])
            bars = limit_bars(row)
            if key in scopes or not bars:
                continue
            scopes[key] = {
                "key": "-".join(part or "" for part in key),
                "title": scope_title(row, user.username),
                "bars": bars,
            }
    if not scopes:
        return None
    # The viewer's own limits first, then per project (the project's, then theirs within it).
    order = {"user": 0, "project": 1, "member": 2}
    ordered = sorted(
        scopes.items(), key=lambda item: (item[0][0] != "user", item[0][1] or "", order[item[0][0]])
    )
    return {"scopes": [scope for _, scope in ordered], "renews_at": month_end(now)}
