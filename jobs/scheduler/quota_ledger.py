"""Quotas: the limits of projects, users and users within projects, counted over a cycle.

A queued job passes through every limit that applies to it (its project's, its user's, its
user's within its project): GPUs held at once, jobs running at once, and GPU-, CPU- and
memory-GB-hours per calendar month. Over a hard level the job waits with a line naming the limit,
the usage and when it frees up; a job that could never fit a limit (more GPUs than the limit, or
more hours than the whole monthly budget) is refused at submit (:func:`quota_impossible`).

Hour budgets count what the scope used this month (``QuotaLimit.used_*_s``, from the usage the
bridge reads) plus what its running jobs may still use (GPUs x the rest of their maxDuration)
plus what the job may use (GPUs x its maxDuration): a job starts only if it cannot overrun the
budget even when everything runs to its maxDuration. Running jobs are never stopped by a limit.

The counters (:class:`QuotaLedger`) start from the snapshot's running jobs and grow with every
start of the cycle (``Limits.record_start``), so two jobs that each fit alone never both start
over a limit. The filter (``filters.QUOTA``) is the ``JOB`` stage of ``pipeline.PIPELINE``:
asked once per job, before any slave is looked at (a limit is the same on every slave).

Soft levels (:meth:`QuotaLedger.above_soft`) count the same way: a job within every hard level
that would pass a soft one starts only by borrowing (``quota_borrowing.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime

from .model import HOUR, QueuedJob, QuotaLimit, RunningJob, Snapshot
from .text import plural

# How every soft-level line ends: what such a job may still do.
BORROWS = "may borrow idle GPUs"

MONTHS = (
    "January", "February", "March", "April", "May", "June", "July", "August", "September",
    "October", "November", "December",
)  # fmt: skip

# (field of QuotaLimit, used field, per-second rate of a job, unit) for the hour budgets.
BUDGETS: tuple[tuple[str, str, str], ...] = (
    ("gpu_hours", "used_gpu_s", "GPU-hours"),
    ("cpu_hours", "used_cpu_s", "CPU-hours"),
    ("mem_gb_hours", "used_mem_gb_s", "memory GB-hours"),
)


def job_rates(gpus: int, cpus: int, memory_gb: float) -> dict[str, float]:
    """What one second of a job holding these resources counts against each budget."""
    return {"gpu_hours": float(gpus), "cpu_hours": float(cpus), "mem_gb_hours": float(memory_gb)}


def scope_keys(user: str, project: str) -> tuple[tuple[str, ...], ...]:
    """The keys of every limit that may apply to a job of ``user`` in ``project``."""
    return (("project", project), ("user", user), ("member", user, project))


def scope_name(limit: QuotaLimit) -> str:
    if limit.scope == "member":
        return f"user {limit.user} in project {limit.project}"
    return f"project {limit.project}" if limit.scope == "project" else f"user {limit.user}"


def renews_text(moment: datetime | None) -> str:
    """``1 December``: the budget renews at the first moment of a month."""
    if moment is None:
        return ""
    return f"{moment.day} {MONTHS[moment.month - 1]}"


def hours(seconds: float) -> str:
    """``347040.0`` -> ``96.4`` (one decimal, no trailing .0 for whole hours)."""
    value = round(seconds / HOUR, 1)
    return f"{value:g}" if value == int(value) else f"{value:.1f}"


def duration_text(seconds: int) -> str:
    if seconds % 86400 == 0 and seconds >= 86400:
        return plural(seconds // 86400, "day")
    if seconds % HOUR == 0:
        return f"{seconds // HOUR} h"
    return f"{seconds / HOUR:.1f} h"


class ScopeCount:
    """One limited scope's counters: GPUs held, jobs running, and per budget (``BUDGETS``
    order) the seconds its running jobs may still use; ``budgets`` holds (index, cap in
    seconds, used seconds) of the budgets it has, so a check touches only those."""

    __slots__ = ("limit", "gpus", "jobs", "committed", "budgets", "soft")

    def __init__(self, limit: QuotaLimit) -> None:
        self.limit = limit
        self.gpus = 0
        self.jobs = 0
        self.committed = [0.0, 0.0, 0.0]
        self.budgets = tuple(
            (index, float(getattr(limit, budget)) * HOUR, float(getattr(limit, used)))
            for index, (budget, used, _) in enumerate(BUDGETS)
            if getattr(limit, budget) is not None
        )
        # The soft levels, None when the scope has none (most have none: skipped at once):
        # (GPUs, jobs, the budgets as ``budgets`` holds them).
        soft_budgets = tuple(
            (index, float(getattr(limit, f"{budget}_soft")) * HOUR, float(getattr(limit, used)))
            for index, (budget, used, _) in enumerate(BUDGETS)
            if getattr(limit, f"{budget}_soft") is not None
        )
        has_soft = limit.gpus_soft is not None or limit.jobs_soft is not None or soft_budgets
        self.soft = (limit.gpus_soft, limit.jobs_soft, soft_budgets) if has_soft else None

    def add(self, gpus: int, cpus: int, memory_gb: float, seconds: float) -> None:
        self.gpus += gpus
        self.jobs += 1
        committed = self.committed
        committed[0] += gpus * seconds
        committed[1] += cpus * seconds
        committed[2] += memory_gb * seconds


class QuotaLedger:
    """The counters of every limited scope, for one cycle (or one standing)."""

    __slots__ = ("now", "scopes", "_of", "any_soft")

    def __init__(
        self, now: datetime, limits: Iterable[QuotaLimit], running: Sequence[RunningJob]
    ) -> None:
        self.now = now
        self.scopes: dict[tuple[str, ...], ScopeCount] = {q.key: ScopeCount(q) for q in limits}
        # (user, project) -> its scopes' counters, the narrowest first (asked once per job).
        self._of: dict[tuple[str, str], tuple[ScopeCount, ...]] = {}
        self.any_soft = any(count.soft is not None for count in self.scopes.values())
        if not self.scopes:
            return
        for job in running:
            counts = self.of_owner(job.user, job.project)
            if not counts:
                continue
            # A halting job frees its room soon and uses nothing more worth counting.
            left = 0.0
            if not job.halting:
                ran = job.run_seconds_before + (now - job.started_at).total_seconds()
                left = max(0.0, job.max_duration_s - ran)
            for count in counts:
                count.add(len(job.gpu_ids), len(job.cpu_ids), job.memory_gb, left)

    @classmethod
    def of(cls, snapshot: Snapshot) -> QuotaLedger:
        return cls(snapshot.now, snapshot.quotas, snapshot.running)

    def of_owner(self, user: str, project: str) -> tuple[ScopeCount, ...]:
        """The counters of the scopes of a job of ``user`` in ``project``, narrowest first."""
        found = self._of.get((user, project))
        if found is None:
            scopes = self.scopes
            found = tuple(
                scopes[key] for key in reversed(scope_keys(user, project)) if key in scopes
            )
            self._of[(user, project)] = found
        return found

    def applying(self, job: QueuedJob) -> list[QuotaLimit]:
        """The limits of the job's scopes, the narrowest first (user in project, user, project)."""
        if not self.scopes:
            return []
        return [count.limit for count in self.of_owner(job.user, job.project)]

    def blocked(self, job: QueuedJob) -> str | None:
        """Why a hard limit keeps this job waiting now, or None."""
        if not self.scopes:
            return None
        for count in self.of_owner(job.user, job.project):
            reason = self._over(count, job)
            if reason is not None:
                return reason
        return None

    @staticmethod
    def _over(count: ScopeCount, job: QueuedJob) -> str | None:
        limit = count.limit
        if limit.gpus is not None and job.gpus and count.gpus + job.gpus > limit.gpus:
            who = scope_name(limit)
            if job.gpus > limit.gpus:
                return (
                    f"{who} may hold at most {limit.gpus} GPUs at once, "
                    f"this job asks for {job.gpus}"
                )
            return (
                f"{who} holds {count.gpus} of its {limit.gpus} GPUs at once; this job needs "
                f"{job.gpus}; GPUs free up as its running jobs end"
            )
        if limit.jobs is not None and count.jobs >= limit.jobs:
            return (
                f"{scope_name(limit)} runs {count.jobs} of its {limit.jobs} jobs at once; "
                "this job starts when one of them ends"
            )
        if count.budgets:
            rates = (job.gpus, job.cpus, job.memory_gb)
            for index, cap, used in count.budgets:
                rate = rates[index]
                if rate and used + count.committed[index] + rate * job.max_duration_s > cap + 1e-6:
                    budget, _, unit = BUDGETS[index]
                    return _budget_line(
                        limit,
                        scope_name(limit),
                        unit,
                        cap / HOUR,
                        used,
                        count.committed[index],
                        job,
                        budget,
                    )
        return None

    def above_soft(self, job: QueuedJob) -> str | None:
        """Why this job may start only by borrowing: the first soft level of its scopes
        (narrowest first) that it would pass, counted as the hard ones are; None when within
        every soft level. Asked of jobs within every hard level."""
        if not self.any_soft:
            return None
        for count in self.of_owner(job.user, job.project):
            if count.soft is not None:
                reason = self._over_soft(count, job)
                if reason is not None:
                    return reason
        return None

    @staticmethod
    def _over_soft(count: ScopeCount, job: QueuedJob) -> str | None:
        assert count.soft is not None
        gpus, jobs, budgets = count.soft
        who = scope_name(count.limit)
        if gpus is not None and job.gpus and count.gpus + job.gpus > gpus:
            line = (
                f"it holds {count.gpus} GPUs at once, soft level {gpus}, this job needs {job.gpus}"
            )
            return f"above the soft level of {who}: {line}; {BORROWS}"
        if jobs is not None and count.jobs >= jobs:
            line = f"it runs {count.jobs} jobs at once, soft level {jobs}"
            return f"above the soft level of {who}: {line}; {BORROWS}"
        rates = (job.gpus, job.cpus, job.memory_gb)
        for index, cap, used in budgets:
            rate = rates[index]
            need = rate * job.max_duration_s
            if rate and used + count.committed[index] + need > cap + 1e-6:
                unit = BUDGETS[index][2]
                line = f"{hours(used)} {unit} used this month"
                if count.committed[index] > 0:
                    line += f" (its running jobs may use {hours(count.committed[index])} more)"
                line += f", soft level {cap / HOUR:g}, this job may use {hours(need)}"
                return f"above the soft level of {who}: {line}; {BORROWS}"
        return None

    def record_start(self, job: QueuedJob) -> None:
        if not self.scopes:
            return
        for count in self.of_owner(job.user, job.project):
            count.add(job.gpus, job.cpus, job.memory_gb, job.max_duration_s)

    def renewals(self) -> list[datetime]:
        """When hour budgets renew (a waiting job may start then)."""
        return [c.limit.renews_at for c in self.scopes.values() if c.limit.renews_at is not None]


def _budget_line(
    limit: QuotaLimit,
    who: str,
    unit: str,
    cap: float,
    used: float,
    committed: float,
    job: QueuedJob,
    budget: str,
) -> str:
    """``project nlp has used 96.4 of 100 GPU-hours this month; this job may run up to 8 h on
    1 GPU; the budget renews on 1 December``."""
    line = f"{who} has used {hours(used)} of {cap:g} {unit} this month"
    if committed > 0:
        line += f" and its running jobs may use {hours(committed)} more"
    what = {
        "gpu_hours": plural(job.gpus, "GPU"),
        "cpu_hours": plural(job.cpus, "CPU"),
        "mem_gb_hours": f"{job.memory_gb:g} GB of memory",
    }[budget]
    line += f"; this job may run up to {duration_text(job.max_duration_s)} on {what}"
    if limit.renews_at is not None:
        line += f"; the budget renews on {renews_text(limit.renews_at)}"
    return line


def quota_impossible(job: QueuedJob, limits: Iterable[QuotaLimit]) -> str | None:
    """Why a hard limit could never let this job run (asked at submit), or None: more GPUs than
    a limit on GPUs held at once, or more hours than a whole monthly budget."""
    keys = set(scope_keys(job.user, job.project))
    rates = job_rates(job.gpus, job.cpus, job.memory_gb)
    for limit in sorted(
        (q for q in limits if q.key in keys),
        key=lambda q: ("member", "user", "project").index(q.scope),
    ):
        who = scope_name(limit)
        if limit.gpus is not None and job.gpus > limit.gpus:
            return f"{who} may hold at most {limit.gpus} GPUs at once, this job asks for {job.gpus}"
        if limit.jobs is not None and limit.jobs == 0:
            return f"{who} may run no jobs"
        for budget, _, unit in BUDGETS:
            cap = getattr(limit, budget)
            need = rates[budget] * job.max_duration_s
            if cap is not None and need > cap * HOUR + 1e-6:
                return (
                    f"{who} has {cap:g} {unit} a month; this job may use {hours(need)} "
                    f"({duration_text(job.max_duration_s)} maxDuration): ask for less time or "
                    "fewer resources"
                )
    return None
