"""What runs held over a period, per user and project: the one reading of the usage rows that
limits (the snapshot's ``QuotaLimit.used_*_s``), the standing and the reports share.

A run is a Job row that started: it held its GPUs, CPUs and memory from ``started_at`` to its
end (``Job.run_end_of``: the container's finish time, ``now`` while it still holds its room,
else its last status change), the very interval fair share accrues (``usage.run_usage``), so
the three figures agree to the second. Restarts are rows of their own, so a restart chain
counts each of its runs once; a run that never started (cancelled while queued) counts nothing.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime

from django.db.models import Q

from jobs.models import ENDED_RUNS, Job, held_seconds
from jobs.scheduler import model as sm
from jobs.scheduler.model import HOUR
from jobs.scheduler.quota_ledger import (
    BUDGETS,
    QuotaLedger,
    job_rates,
    quota_impossible,
    scope_keys,
)
from jobs.states import HOLDS_RESOURCES
from quotas.selectors import LimitsInForce, month_end, month_start, quotas_in_force

PERIOD_FIELDS = (
    "id", "uuid", "owner__username", "project__name", "slave__cluster_id", "gpus", "cpus",
    "cpu_memory_gb", "tmpfs_gb", "created", "started_at", "ended_at", "status",
    "status_updated", "halt_events", "gang_id",
)  # fmt: skip


def runs_overlapping(start: datetime, end: datetime, *, scope: Q | None = None) -> list[dict]:
    """Rows of the runs that held resources at some moment of ``[start, end)``."""
    runs = Job.objects.filter(started_at__isnull=False, started_at__lt=end).filter(
        Q(status__in=HOLDS_RESOURCES) | (ENDED_RUNS & Q(status_updated__gte=start))
    )
    if scope is not None:
        runs = runs.filter(scope)
    return list(runs.order_by().values(*PERIOD_FIELDS))


def run_amounts(run: dict, seconds: float) -> tuple[float, float, float]:
    """(GPU-seconds, CPU-seconds, memory-GB-seconds) of ``seconds`` of this run."""
    memory = Job.held_memory_of(run["cpu_memory_gb"], run["tmpfs_gb"])
    return run["gpus"] * seconds, run["cpus"] * seconds, memory * seconds


def usage_by_scope(
    runs: Iterable[dict], *, start: datetime, end: datetime, now: datetime
) -> dict[tuple[str, ...], list[float]]:
    """Per scope key (``("project", p)``, ``("user", u)``, ``("member", u, p)``): [GPU-s, CPU-s,
    memory-GB-s] held in ``[start, min(end, now))``."""
    totals: dict[tuple[str, ...], list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
    for run in runs:
        seconds = held_seconds(run, start=start, end=end, now=now)
        if seconds <= 0:
            continue
        amounts = run_amounts(run, seconds)
        user, project = run["owner__username"], run["project__name"]
        for key in (("project", project), ("user", user), ("member", user, project)):
            row = totals[key]
            for i, amount in enumerate(amounts):
                row[i] += amount
    return totals


def quota_limit(
    limits: LimitsInForce, used: list[float] | None, renews_at: datetime
) -> sm.QuotaLimit:
    """The pure scheduler's view of one scope's limits and what it used this month."""
    values = limits.limits
    used = used or [0.0, 0.0, 0.0]

    def number(name: str) -> float | None:
        value = values.get(name)
        return None if value is None else float(value)

    def count(name: str) -> int | None:
        value = values.get(name)
        return None if value is None else int(value)

    return sm.QuotaLimit(
        scope=limits.scope,
        project=limits.project,
        user=limits.user,
        gpus=count("gpus_hard"),
        gpus_soft=count("gpus_soft"),
        jobs=count("jobs_hard"),
        jobs_soft=count("jobs_soft"),
        gpu_hours=number("gpu_hours_hard"),
        gpu_hours_soft=number("gpu_hours_soft"),
        cpu_hours=number("cpu_hours_hard"),
        cpu_hours_soft=number("cpu_hours_soft"),
        mem_gb_hours=number("mem_gb_hours_hard"),
        mem_gb_hours_soft=number("mem_gb_hours_soft"),
        used_gpu_s=used[0],
        used_cpu_s=used[1],
        used_mem_gb_s=used[2],
        renews_at=renews_at,
    )


def quota_limits(
    *, now: datetime, projects: Iterable[str], users: Iterable[str]
) -> tuple[sm.QuotaLimit, ...]:
    """The limits in force for these projects and users, with this month's usage (two queries
    when some limit exists, one otherwise)."""
    in_force = quotas_in_force(projects=projects, users=users)
    if not in_force:
        return ()
    start, renews = month_start(now), month_end(now)
    limited_projects = {q.project for q in in_force if q.scope == "project"}
    limited_users = {q.user for q in in_force if q.scope in ("user", "member")}
    runs = runs_overlapping(
        start,
        renews,
        scope=Q(project__name__in=limited_projects) | Q(owner__username__in=limited_users),
    )
    used = usage_by_scope(runs, start=start, end=renews, now=now)
    keys = {
        "project": lambda q: ("project", q.project),
        "user": lambda q: ("user", q.user),
        "member": lambda q: ("member", q.user, q.project),
    }
    return tuple(quota_limit(q, used.get(keys[q.scope](q)), renews) for q in in_force)


def _running_in(now: datetime, scope: Q) -> list[sm.RunningJob]:
    """The jobs holding resources now in these scopes, as the scheduler sees them."""
    rows = Job.objects.filter(scope, status__in=HOLDS_RESOURCES).values(
        "uuid", "owner__username", "project__name", "gpu_ids", "cpu_ids", "cpu_memory_gb",
        "tmpfs_gb", "started_at", "max_duration_s", "status",
    )  # fmt: skip
    return [
        sm.RunningJob(
            id=str(row["uuid"]),
            user=row["owner__username"],
            project=row["project__name"],
            slave="",
            gpu_ids=tuple(row["gpu_ids"]),
            cpu_ids=tuple(row["cpu_ids"]),
            memory_gb=float(Job.held_memory_of(row["cpu_memory_gb"], row["tmpfs_gb"])),
            started_at=row["started_at"] or now,
            max_duration_s=row["max_duration_s"],
            halting=row["status"] in ("MUSTHALT", "HALTING", "CANCELLING"),
        )
        for row in rows
    ]


def quota_standing(
    *,
    user: str,
    project: str,
    now: datetime,
    gpus: int = 0,
    cpus: int = 1,
    memory_gb: float = 1.0,
    max_duration_s: int = 0,
) -> dict:
    """A user's standing in a project before they submit: each limit that applies (their own
    within the project, theirs, the project's) with this month's usage and what is held now,
    what a job of this size may consume at most, whether it fits now (the scheduler's own rule,
    ``QuotaLedger.blocked``) and ever (``quota_impossible``), and ``borrows``: the soft level it
    would pass, when it fits only by borrowing idle GPUs."""
    limits = quota_limits(now=now, projects=[project], users=[user])
    keys = set(scope_keys(user, project))
    limits = tuple(q for q in limits if q.key in keys)
    running = _running_in(now, Q(project__name=project) | Q(owner__username=user))
    ledger = QuotaLedger(now, limits, running)
    job = sm.QueuedJob(
        id="standing",
        user=user,
        project=project,
        submitted_at=now,
        gpus=gpus,
        cpus=cpus,
        memory_gb=memory_gb,
        max_duration_s=max_duration_s,
    )
    rates = job_rates(gpus, cpus, memory_gb)
    rows = []
    for count in ledger.of_owner(user, project):
        limit = count.limit
        rows.append(
            {
                "scope": limit.scope,
                "project": limit.project or None,
                "user": limit.user or None,
                "gpus": {"hard": limit.gpus, "soft": limit.gpus_soft, "held": count.gpus},
                "jobs": {"hard": limit.jobs, "soft": limit.jobs_soft, "running": count.jobs},
                **{
                    budget: {
                        "hard": getattr(limit, budget),
                        "soft": getattr(limit, f"{budget}_soft"),
                        "used": round(getattr(limit, used) / HOUR, 3),
                        "running_may_use": round(count.committed[index] / HOUR, 3),
                    }
                    for index, (budget, used, _) in enumerate(BUDGETS)
                },
                "renews_at": limit.renews_at,
            }
        )
    impossible = quota_impossible(job, limits) if max_duration_s else None
    waits = ledger.blocked(job) if max_duration_s else None
    # Within every hard level but above a soft one: it may start only on idle GPUs, borrowed.
    borrows = ledger.above_soft(job) if max_duration_s and not (impossible or waits) else None
    return {
        "user": user,
        "project": project,
        "month_start": month_start(now),
        "renews_at": month_end(now),
        "limits": rows,
        "job": {
            "gpus": gpus,
            "cpus": cpus,
            "memory_gb": memory_gb,
            "max_duration_s": max_duration_s,
            "may_use": {b: round(rate * max_duration_s / HOUR, 3) for b, rate in rates.items()},
            "fits_ever": impossible is None,
            "fits_now": impossible is None and waits is None,
            "reason": impossible or waits,
            "borrows": borrows,
        },
    }
