"""The figures of a usage report: per user, project, user within a project or cluster, for a
period, in the manner of Slurm's ``sreport cluster AccountUtilizationByUser``, and the table of
runs by GPU count per project (``sreport job SizesByAccount``). docs/reports.md names each column.

Usage is read from the runs exactly as fair share and the limits read it: the rows of
``quota_usage.runs_overlapping`` and the interval of ``jobs.models.held_interval``, clipped
to the period (and to ``now``), so a report's GPU-seconds are the quota's used seconds and the
fair share's accrued ones, to the second (tests/reports/test_accounting_replay.py).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime

from django.db.models import Q

from jobs.models import Job, JobSample, held_seconds
from jobs.scheduler_bridge.quota_usage import run_amounts, runs_overlapping
from jobs.states import FINISHED
from reports.periods import ReportPeriod

BY_CHOICES = ("user", "project", "member", "cluster")
KEY_COLUMNS = {
    "user": ("user",),
    "project": ("project",),
    "member": ("project", "user"),
    "cluster": ("cluster",),
}
END_STATES = tuple(sorted(str(s.value) for s in FINISHED))  # CANCELLED, FAILED, FINISHED, HALTED
# The figures of every row, in the order of the CSV (after the period and the key columns).
FIGURE_COLUMNS = (
    "runs", "gpu_hours", "cpu_hours", "mem_gb_hours", "borrowed_gpu_hours",
    "gpu_seconds", "cpu_seconds", "mem_gb_seconds", "borrowed_gpu_seconds",
    *(f"jobs_{state.lower()}" for state in END_STATES),
    "wait_p50_s", "wait_p90_s", "gpu_util_percent", "gpu_util_readings",
)  # fmt: skip
# GPU-count buckets of the sizes table (sreport's job size grouping, for GPUs).
SIZE_BUCKETS = ((0, 0, "0"), (1, 1, "1"), (2, 3, "2-3"), (4, 7, "4-7"), (8, 15, "8-15"))
SIZE_TOP = "16+"
# Whether jobs.Job has the ``borrowed`` flag yet (issue 29 item 2, built beside this app):
# until it exists no run counts as borrowed.
HAS_BORROWED = any(f.name == "borrowed" for f in Job._meta.get_fields())
SAMPLE_CHUNK = 500  # job ids per query of samples


def percentile(values: list[float], p: float) -> float | None:
    """Nearest-rank percentile (the value below which ``p`` % of them lie); None for none."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


@dataclass
class Figures:
    """The sums of one row."""

    runs: int = 0
    gpu_s: float = 0.0
    cpu_s: float = 0.0
    mem_gb_s: float = 0.0
    borrowed_gpu_s: float = 0.0
    jobs: dict[str, int] = field(default_factory=dict)
    waits: list[float] = field(default_factory=list)
    util_sum: float = 0.0
    util_readings: int = 0

    def as_columns(self) -> dict[str, object]:
        p50, p90 = percentile(self.waits, 50), percentile(self.waits, 90)
        return {
            "runs": self.runs,
            "gpu_hours": round(self.gpu_s / 3600, 3),
            "cpu_hours": round(self.cpu_s / 3600, 3),
            "mem_gb_hours": round(self.mem_gb_s / 3600, 3),
            "borrowed_gpu_hours": round(self.borrowed_gpu_s / 3600, 3),
            "gpu_seconds": round(self.gpu_s, 3),
            "cpu_seconds": round(self.cpu_s, 3),
            "mem_gb_seconds": round(self.mem_gb_s, 3),
            "borrowed_gpu_seconds": round(self.borrowed_gpu_s, 3),
            **{f"jobs_{s.lower()}": self.jobs.get(s, 0) for s in END_STATES},
            "wait_p50_s": None if p50 is None else round(p50, 3),
            "wait_p90_s": None if p90 is None else round(p90, 3),
            "gpu_util_percent": (
                round(self.util_sum / self.util_readings, 1) if self.util_readings else None
            ),
            "gpu_util_readings": self.util_readings,
        }


def _key_of(by: str) -> Callable[[dict], tuple]:
    if by == "user":
        return lambda row: (row["owner__username"],)
    if by == "project":
        return lambda row: (row["project__name"],)
    if by == "member":
        return lambda row: (row["project__name"], row["owner__username"])
    if by == "cluster":
        return lambda row: (row["slave__cluster_id"],)
    raise ValueError(f"by: must be one of {', '.join(BY_CHOICES)}")


def _runs(period: ReportPeriod, scope: Q | None) -> list[dict]:
    runs = runs_overlapping(period.start, period.end, scope=scope)
    if HAS_BORROWED and runs:
        # The same reading restricted to borrowed runs (no IN list of every run's id).
        flag = Q(borrowed=True)
        borrowed = runs_overlapping(
            period.start, period.end, scope=flag if scope is None else scope & flag
        )
        ids = {run["id"] for run in borrowed}
        for run in runs:
            run["borrowed"] = run["id"] in ids
    return runs


def _ended_jobs(period: ReportPeriod, scope: Q | None) -> list[dict]:
    """Jobs that reached an end state in the period (cancelled before they started too)."""
    jobs = Job.objects.filter(
        status__in=END_STATES, status_updated__gte=period.start, status_updated__lt=period.end
    )
    if scope is not None:
        jobs = jobs.filter(scope)
    fields = ("owner__username", "project__name", "slave__cluster_id", "status")
    return [dict(row) for row in jobs.order_by().values(*fields)]


def _utilisation(run_ids: Iterable[int], period: ReportPeriod) -> dict[int, tuple[float, int]]:
    """Per job: (sum of GPU utilisation readings in %, readings) of its samples in the period."""
    ids = sorted(run_ids)
    found: dict[int, tuple[float, int]] = {}
    for i in range(0, len(ids), SAMPLE_CHUNK):
        samples = JobSample.objects.filter(
            job_id__in=ids[i : i + SAMPLE_CHUNK],
            time__gte=period.start,
            time__lt=period.end,
        ).values_list("job_id", "gpus")
        for job_id, gpus in samples.iterator():
            readings = [g["percent"] for g in gpus or [] if g.get("percent") is not None]
            if readings:
                total, count = found.get(job_id, (0.0, 0))
                found[job_id] = (total + sum(readings), count + len(readings))
    return found


@dataclass
class UsageReport:
    by: str
    period: ReportPeriod
    now: datetime
    rows: list[dict]
    totals: dict

    @property
    def columns(self) -> tuple[str, ...]:
        return ("from", "to", *KEY_COLUMNS[self.by], *FIGURE_COLUMNS)


def _add_run(figures: Figures, run: dict, seconds: float, wait: float | None, util) -> None:
    gpu_s, cpu_s, mem_s = run_amounts(run, seconds)
    figures.runs += 1
    figures.gpu_s += gpu_s
    figures.cpu_s += cpu_s
    figures.mem_gb_s += mem_s
    if run.get("borrowed"):
        figures.borrowed_gpu_s += gpu_s
    if wait is not None:
        figures.waits.append(wait)
    if util is not None:
        figures.util_sum += util[0]
        figures.util_readings += util[1]


def usage_report(*, by: str, period: ReportPeriod, now: datetime, scope: Q | None) -> UsageReport:
    """Every row of the report ``by`` over ``period`` (runs clipped to it and to ``now``) for
    the jobs in ``scope`` (None: all), with the totals of them all."""
    key_of = _key_of(by)
    runs = _runs(period, scope)
    held = {
        run["id"]: held_seconds(run, start=period.start, end=period.end, now=now) for run in runs
    }
    util = _utilisation((rid for rid, s in held.items() if s > 0), period)
    rows: dict[tuple, Figures] = defaultdict(Figures)
    total = Figures()
    for run in runs:
        seconds = held[run["id"]]
        started = run["started_at"]
        # The wait belongs to the period the run started in: queued (created) -> started.
        wait = (
            (started - run["created"]).total_seconds()
            if period.start <= started < period.end and started <= now
            else None
        )
        if seconds <= 0:
            if wait is not None:
                # Started in the period but held nothing in it (started and ended at once).
                for figures in (rows[key_of(run)], total):
                    figures.waits.append(wait)
            continue
        for figures in (rows[key_of(run)], total):
            _add_run(figures, run, seconds, wait, util.get(run["id"]))
    for job in _ended_jobs(period, scope):
        for figures in (rows[key_of(job)], total):
            figures.jobs[job["status"]] = figures.jobs.get(job["status"], 0) + 1
    bounds = {"from": f"{period.first_day:%Y-%m-%d}", "to": f"{period.last_day:%Y-%m-%d}"}
    names = KEY_COLUMNS[by]
    out = []
    for key in sorted(rows, key=lambda k: tuple(_order(v) for v in k)):
        labels = dict(zip(names, key, strict=True))
        if by == "cluster":
            labels["cluster"] = cluster_label(key[0])
        out.append({**bounds, **labels, **rows[key].as_columns()})
    totals = {**bounds, **dict.fromkeys(names, "total"), **total.as_columns()}
    return UsageReport(by=by, period=period, now=now, rows=out, totals=totals)


def _order(value) -> tuple[bool, int, str]:
    """Rows in the order of their keys: names alphabetically, cluster ids as numbers, none last."""
    if value is None:
        return (True, 0, "")
    return (False, value if isinstance(value, int) else 0, str(value))


def cluster_label(cluster_id: int | None) -> str:
    """A cluster's id as rows name it; "unplaced" for jobs that never had a slave (or whose
    slave was removed since)."""
    return "unplaced" if cluster_id is None else str(cluster_id)


def size_bucket(gpus: int) -> str:
    for low, high, label in SIZE_BUCKETS:
        if low <= gpus <= high:
            return label
    return SIZE_TOP


SIZE_LABELS = (*(label for _, _, label in SIZE_BUCKETS), SIZE_TOP)
SIZE_COLUMNS = ("from", "to", "project", "gpus", "runs", "gpu_hours", "gpu_seconds")


def sizes_report(*, period: ReportPeriod, now: datetime, scope: Q | None) -> list[dict]:
    """Per project and GPU-count bucket (the run's GPUs: a gang's tasks are runs of their own):
    how many runs held resources in the period and their GPU-hours (sreport's SizesByAccount)."""
    cells: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0, 0.0])
    for run in runs_overlapping(period.start, period.end, scope=scope):
        seconds = held_seconds(run, start=period.start, end=period.end, now=now)
        if seconds <= 0:
            continue
        cell = cells[(run["project__name"], size_bucket(run["gpus"]))]
        cell[0] += 1
        cell[1] += run["gpus"] * seconds
    bounds = {"from": f"{period.first_day:%Y-%m-%d}", "to": f"{period.last_day:%Y-%m-%d}"}
    order = {label: i for i, label in enumerate(SIZE_LABELS)}
    return [
        {
            **bounds,
            "project": project,
            "gpus": bucket,
            "runs": int(runs),
            "gpu_hours": round(gpu_s / 3600, 3),
            "gpu_seconds": round(gpu_s, 3),
        }
        for (project, bucket), (runs, gpu_s) in sorted(
            cells.items(), key=lambda item: (item[0][0], order[item[0][1]])
        )
    ]
