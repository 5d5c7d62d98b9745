"""Reservation windows: who may use the reserved resources, and when others must leave.

Rules (GPULab's, made precise):

* During ``[start, end)`` the reserved resources (a cluster, optionally some of its slaves,
  optionally only ``gpu_count`` of their GPUs) go only to entitled jobs: jobs that name the
  reservation and whose user or project is listed.
* Before the window, a job that is not entitled is not started on those resources when it would
  still run (up to its maxDuration) at the start -- unless its minDuration ends before the start:
  it then runs as a guest (``Start.ignoring_reservation_ids``) and is halted when the window opens.
* Once the window is open, running jobs that are not entitled and are past their minDuration are
  halted ("Reservation Priority"); with a ``gpu_count`` only as many as needed so that no more than
  ``total - gpu_count`` GPUs of the reserved slaves stay with jobs that are not entitled.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta

from .model import QueuedJob, ReservationWindow, RunningJob, SlaveState
from .text import compress_names, plural
from .timing import format_clock, max_end, min_end

# How a queued job relates to one reservation (None: the reservation does not concern it).
ENTITLED = "entitled"  # may use the reserved resources
GUEST = "guest"  # may start before the window; halted when it opens
BLOCKED = "blocked"  # may not use the reserved resources (except a gpu_count's unreserved part)


class ResRuntime:
    """One reservation during a cycle, with the GPU budgets of the jobs that are not entitled."""

    __slots__ = (
        "res",
        "id",
        "active",
        "slave_names",
        "total_gpus",
        "limit",
        "non_entitled_gpus",
        "committed_gpus",
        "_text",
    )

    def __init__(self, res: ReservationWindow, slaves: Sequence[SlaveState], now: datetime):
        self.res = res
        self.id = res.id
        self.active = res.start <= now < res.end
        self.slave_names = frozenset(s.name for s in slaves if res.covers(s))
        self.total_gpus = sum(len(s.gpus) for s in slaves if s.name in self.slave_names)
        # GPUs that jobs which are not entitled may hold on the reserved slaves during the window.
        held = self.total_gpus if res.gpu_count is None else min(res.gpu_count, self.total_gpus)
        self.limit = self.total_gpus - max(0, held)
        self.non_entitled_gpus = 0  # active window: GPUs held now by jobs not entitled
        self.committed_gpus = 0  # future window: GPUs that will still be held at its start
        self._text: str | None = None

    @property
    def whole(self) -> bool:
        """Whether everything of the reserved slaves is held (no gpu_count)."""
        return self.res.gpu_count is None

    def describe(self, now: datetime) -> str:
        """``reservation R blocks gpu1-gpu4 from 14:00 UTC until 18:00 UTC`` (``holds ...
        until`` when open)."""
        if self._text is None:
            self._text = self._describe(now)
        return self._text

    def _describe(self, now: datetime) -> str:
        names = compress_names(self.slave_names)
        what = names if self.whole else f"{plural(self.res.gpu_count or 0, 'GPU')} of {names}"
        if self.active:
            return (
                f"reservation {self.res.name} holds {what} until {format_clock(self.res.end, now)}"
            )
        # Until when: a job kept off by it waits for its end (or starts as a guest before it).
        return (
            f"reservation {self.res.name} blocks {what} from {format_clock(self.res.start, now)} "
            f"until {format_clock(self.res.end, now)}"
        )


def build(
    reservations: Iterable[ReservationWindow], slaves: Sequence[SlaveState], now: datetime
) -> list[ResRuntime]:
    """Runtime view of every reservation not yet over, in a stable order."""
    live = [r for r in reservations if r.end > now and r.end > r.start]
    live.sort(key=lambda r: (r.start, r.id))
    return [ResRuntime(r, slaves, now) for r in live]


def relation(job: QueuedJob, rr: ResRuntime, now: datetime) -> str | None:
    """How a queued job that would start now relates to one reservation."""
    res = rr.res
    if res.admits(user=job.user, project=job.project, reservation_ids=job.reservation_ids):
        return ENTITLED
    if rr.active:
        return BLOCKED
    if now + timedelta(seconds=job.max_duration_s) <= res.start:
        return None  # ends (at the latest) before the window opens
    if now + timedelta(seconds=job.min_duration_s) <= res.start:
        return GUEST
    return BLOCKED


def running_entitled(job: RunningJob, res: ReservationWindow) -> bool:
    return res.admits(user=job.user, project=job.project, reservation_ids=job.reservation_ids)


def statically_blocked(rel: str | None, rr: ResRuntime) -> bool:
    """A whole-slave reservation keeps a BLOCKED job off its slaves entirely."""
    return rel == BLOCKED and rr.whole


def budget_blocked(rel: str | None, rr: ResRuntime, gpus: int) -> bool:
    """A gpu_count reservation keeps a job off when the unreserved GPUs are used up."""
    if rel is None or rel == ENTITLED or rr.whole or gpus == 0:
        return False
    if rr.active:
        return rr.non_entitled_gpus + gpus > rr.limit
    return rel != GUEST and rr.committed_gpus + gpus > rr.limit


def record_start(rel: str | None, rr: ResRuntime, gpus: int) -> bool:
    """Account a start on the reservation's slaves; True when the job starts there as a guest."""
    if rel is None or rel == ENTITLED:
        return False
    if rr.whole:
        return rel == GUEST
    if gpus == 0:
        return False
    if rr.active:
        rr.non_entitled_gpus += gpus
        return False
    if rr.committed_gpus + gpus <= rr.limit:
        rr.committed_gpus += gpus
        return False
    return True  # GUEST: budget_blocked let it through only as a guest


def compute_budgets(
    rrs: Sequence[ResRuntime],
    running: Iterable[RunningJob],
    leaving: set[str],
) -> None:
    """Count the GPUs that jobs not entitled hold (active) or will hold at the start (future).

    ``leaving`` are jobs that are halting or were halted/cancelled in this cycle: their GPUs are
    still busy but about to be given back, so they do not use up a budget.
    """
    running = [job for job in running if job.id not in leaving and not job.halting]
    for rr in rrs:
        if rr.whole:
            continue
        for job in running:
            if job.slave not in rr.slave_names or not job.gpu_ids:
                continue
            if running_entitled(job, rr.res):
                continue
            if rr.active:
                rr.non_entitled_gpus += len(job.gpu_ids)
            elif max_end(job) > rr.res.start and min_end(job) > rr.res.start:
                # It will still run at the start and cannot be halted then.
                rr.committed_gpus += len(job.gpu_ids)


def activation_victims(
    rr: ResRuntime,
    running_by_slave: Mapping[str, Sequence[RunningJob]],
    leaving: set[str],
    usage: Mapping[str, float],
    now: datetime,
) -> list[RunningJob]:
    """Running jobs to halt now because the reservation's window is open."""
    if not rr.active:
        return []
    candidates = [
        job
        for name in sorted(rr.slave_names)
        for job in running_by_slave.get(name, ())
        if job.id not in leaving and not job.halting and not running_entitled(job, rr.res)
    ]
    haltable = [
        job for job in candidates if (now - job.started_at).total_seconds() >= job.min_duration_s
    ]
    if rr.whole:
        return haltable
    excess = sum(len(job.gpu_ids) for job in candidates) - rr.limit
    if excess <= 0:
        return []
    # Guests that knew they would be halted first, then restartable jobs, then heavy users.
    haltable = [job for job in haltable if job.gpu_ids]
    haltable.sort(
        key=lambda job: (
            rr.id not in job.ignoring_reservation_ids,
            not job.restartable,
            -usage.get(job.user, 0.0),
            -job.started_at.timestamp(),
            job.id,
        )
    )
    victims = []
    for job in haltable:
        if excess <= 0:
            break
        victims.append(job)
        excess -= len(job.gpu_ids)
    return victims
