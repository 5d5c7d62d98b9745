"""Start-time estimates and what-if advice, by simulating the scheduler's own cycle forward.

Pure, like the rest of the package. The simulation replays ``run_cycle`` at the moments when
something frees or blocks room, assuming the worst case the portal knows for sure:

* every running job ends at its maxDuration (``started_at`` + what is left of it);
* reservations open and close as scheduled (the cycle applies them, halts included);
* queued jobs are tried in the scheduler's queue order; jobs *behind* the estimated ones are
  left out (cheap, and the estimate is what the job can count on when nobody jumps ahead);
* what a cycle starts runs until its own maxDuration; what it halts or cancels is gone at the
  next event (a restartable halted job is not re-queued); usage does not move.

Events are the ends of running jobs, reservation starts and ends, and queued jobs' notBefore;
at most ``max_events`` cycles are run and nothing beyond ``horizon_s`` is looked at, so the cost
is bounded whatever the queue. A job that starts in the first cycle gets ``now``.

:func:`advise` proposes concrete changes (fewer GPUs, another cluster or GPU model, a
maxDuration short enough to finish before a reservation) and keeps those that the same
simulation says start sooner.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from .core import run_cycle
from .model import QueuedJob, RunningJob, Snapshot, Start
from .ordering import order_queue
from .text import plural
from .timing import format_clock, format_duration, max_end

MAX_EVENTS = 64
HORIZON_S = 30 * 24 * 3600
# Halted and cancelled jobs are treated as gone this long after the cycle that stopped them
# (the halt grace period and a tick), when no other event comes first.
LEAVE_S = 60
# maxDuration advice is given only down to this (shorter jobs are rarely what the user wants).
MIN_ADVISED_DURATION_S = 10 * 60
MAX_PER_KIND = 3
MAX_VARIANTS = 12
# Simulated cycles for all the what-if variants of one job together.
MAX_ADVICE_CYCLES = 64
# Jobs further back in the queue get no estimate: every simulated cycle carries the jobs ahead.
MAX_QUEUE_POSITION = 200


@dataclass(frozen=True, slots=True)
class Estimate:
    """When a job is expected to start (None: not within the horizon or the event budget, or
    never: it fails or can never run), after how many simulated cycles, and why not if not."""

    job_id: str
    start: datetime | None
    cycles: int
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class Advice:
    """One change to the request and the start it would get (always earlier than without)."""

    kind: str  # gpus | cluster | gpu_model | max_duration
    change: str  # "1 GPU instead of 2"
    start: datetime
    value: object  # the new value of the field (for clients)


def head_of_queue(
    snapshot: Snapshot, targets: Iterable[str], limit: int | None = None
) -> tuple[QueuedJob, ...]:
    """The queued jobs up to the last target in queue order (the others cannot go first), at
    most ``limit`` of them."""
    wanted = set(targets)
    ordered = order_queue(snapshot.queued, snapshot.usage)
    if limit is not None:
        ordered = ordered[:limit]
    last = max((i for i, job in enumerate(ordered) if job.id in wanted), default=-1)
    return tuple(ordered[: last + 1])


def simulate(
    snapshot: Snapshot,
    targets: Sequence[str],
    *,
    max_events: int = MAX_EVENTS,
    horizon_s: int = HORIZON_S,
    before: datetime | None = None,
    max_position: int = MAX_QUEUE_POSITION,
) -> dict[str, Estimate]:
    """Estimated starts of the ``targets`` (queued job ids) in one simulation.

    ``before``: only starts earlier than this matter (what-if variants); the simulation stops
    there.
    """
    now = snapshot.now
    horizon = now + timedelta(seconds=horizon_s)
    if before is not None:
        horizon = min(horizon, before - timedelta(microseconds=1))
    left = set(targets)
    found: dict[str, Estimate] = {}
    queued = list(head_of_queue(snapshot, left, max_position))
    left &= {job.id for job in queued}
    queued_ids = {job.id for job in snapshot.queued}
    for job_id in set(targets) - left:
        why = (
            f"at least {max_position} jobs are ahead of it in the queue"
            if job_id in queued_ids
            else "not queued"
        )
        found[job_id] = Estimate(job_id, None, 0, why)
    running = list(snapshot.running)
    gone_at: dict[str, datetime] = {}  # halted or cancelled in the simulation
    t = now
    cycles = 0
    reason: str | None = None
    while left:
        if cycles >= max_events:
            reason = f"not started within {plural(max_events, 'simulated scheduling round')}"
            break
        running = [job for job in running if max_end(job) > t and gone_at.get(job.id, horizon) > t]
        # Bucket counts come from the simulated running jobs (the snapshot's are of now).
        state = replace(
            snapshot, now=t, running=tuple(running), queued=tuple(queued), bucket_counts={}
        )
        result = run_cycle(state)
        cycles += 1
        by_id = {job.id: job for job in queued}
        done: set[str] = set()
        for decision in result.decisions:
            if isinstance(decision, Start):
                job = by_id[decision.job_id]
                running.append(_as_running(job, decision, t))
                done.add(job.id)
                if job.id in left:
                    found[job.id] = Estimate(job.id, t, cycles)
                    left.discard(job.id)
            elif decision.job_id in by_id:  # failed (notAfter, interactive)
                done.add(decision.job_id)
                if decision.job_id in left:
                    found[decision.job_id] = Estimate(
                        decision.job_id, None, cycles, decision.reason
                    )
                    left.discard(decision.job_id)
            else:  # halted or cancelled running job: its room comes back soon
                gone_at.setdefault(decision.job_id, t + timedelta(seconds=LEAVE_S))
        queued = [job for job in queued if job.id not in done]
        if not left:
            break
        nxt = _next_event(t, running, queued, snapshot, gone_at)
        if nxt is None or nxt > horizon:
            reason = f"not started within {format_duration((horizon - now).total_seconds())}"
            break
        t = nxt
    for job_id in left:
        found[job_id] = Estimate(job_id, None, cycles, reason)
    return found


def estimate(snapshot: Snapshot, job_id: str, **kw: Any) -> Estimate:
    return simulate(snapshot, [job_id], **kw)[job_id]


def _as_running(job: QueuedJob, start: Start, t: datetime) -> RunningJob:
    return RunningJob(
        id=job.id,
        user=job.user,
        project=job.project,
        slave=start.slave,
        gpu_ids=start.gpu_ids,
        cpu_ids=start.cpu_ids,
        memory_gb=job.memory_gb,
        started_at=t,
        min_duration_s=job.min_duration_s,
        max_duration_s=job.max_duration_s,
        restartable=job.restartable,
        reservation_ids=job.reservation_ids,
        bucket=job.bucket[0] if job.bucket else None,
        ignoring_reservation_ids=start.ignoring_reservation_ids,
    )


def _next_event(
    t: datetime,
    running: Sequence[RunningJob],
    queued: Sequence[QueuedJob],
    snapshot: Snapshot,
    gone_at: dict[str, datetime],
) -> datetime | None:
    moments = [max_end(job) for job in running]
    moments += [gone_at[job.id] for job in running if job.id in gone_at]
    for window in snapshot.reservations:
        moments += [window.start, window.end]
    moments += [job.not_before for job in queued if job.not_before is not None]
    later = [m for m in moments if m > t]
    return min(later) if later else None


# --- what-if advice ----------------------------------------------------------------------------


def advise(
    snapshot: Snapshot,
    job_id: str,
    *,
    baseline: Estimate | None = None,
    usable_clusters: Iterable[int] | None = None,
    max_variants: int = MAX_VARIANTS,
    max_cycles: int = MAX_ADVICE_CYCLES,
    **kw: Any,
) -> list[Advice]:
    """Changes to the job's request that the simulation says start it sooner, best first.

    ``usable_clusters``: the clusters the job's project may ask for (default: the public ones
    and the private ones it owns, from the snapshot's slaves). At most ``max_variants`` changes
    are tried, with ``max_cycles`` simulated cycles for all of them together.
    """
    job = next((j for j in snapshot.queued if j.id == job_id), None)
    if job is None:
        return []
    if baseline is None:
        baseline = estimate(snapshot, job_id, **kw)
    if baseline.start is not None and baseline.start <= snapshot.now:
        return []  # it starts now: nothing starts sooner
    if baseline.start is None and baseline.cycles == 0:
        return []  # not simulated at all (too far back in the queue)
    variants = list(_variants(snapshot, job, usable_clusters))[:max_variants]
    found: dict[str, Advice] = {}  # best per kind
    budget = max_cycles
    for kind, change, value, variant in variants:
        if budget <= 0:
            break
        if kind in found and kind == "gpus":
            continue  # the largest GPU count that helps is the smallest change
        others = tuple(variant if j.id == job_id else j for j in snapshot.queued)
        # Only a start before the baseline's matters: the variant's simulation stops there.
        result = estimate(
            replace(snapshot, queued=others),
            job_id,
            before=baseline.start,
            max_events=min(budget, kw.get("max_events", MAX_EVENTS)),
            **{k: v for k, v in kw.items() if k != "max_events"},
        )
        budget -= result.cycles
        if result.start is None or not _sooner(result.start, baseline.start):
            continue
        best = found.get(kind)
        if best is None or result.start < best.start:
            found[kind] = Advice(kind, change, result.start, value)
    return sorted(found.values(), key=lambda a: (a.start, a.kind))


def _sooner(start: datetime, baseline: datetime | None) -> bool:
    return baseline is None or start < baseline


def _variants(
    snapshot: Snapshot, job: QueuedJob, usable_clusters: Iterable[int] | None
) -> Iterator[tuple[str, str, object, QueuedJob]]:
    """(kind, change, new value, variant job), fewest changes first."""
    # At most three smaller GPU counts, largest first: one less, half, one.
    for gpus in sorted({n for n in (job.gpus - 1, job.gpus // 2, 1) if 0 < n < job.gpus})[::-1]:
        yield (
            "gpus",
            f"{plural(gpus, 'GPU')} instead of {job.gpus}",
            gpus,
            replace(job, gpus=gpus),
        )
    slaves = snapshot.slaves
    if usable_clusters is None:
        usable_clusters = {
            s.cluster_id
            for s in slaves
            if not s.cluster_private or job.project in s.cluster_owner_projects
        }
    usable = set(usable_clusters)
    if job.cluster_id is not None and job.slave_name is None:
        for cluster_id in sorted(usable - {job.cluster_id})[:MAX_PER_KIND]:
            yield (
                "cluster",
                f"cluster {cluster_id} instead of cluster {job.cluster_id}",
                cluster_id,
                replace(job, cluster_id=cluster_id),
            )
    if job.gpus and job.gpu_models:
        wanted = tuple(m.strip().lower() for m in job.gpu_models if m.strip())
        models = sorted(
            {
                gpu.model
                for s in slaves
                if s.cluster_id in usable
                and (job.cluster_id is None or s.cluster_id == job.cluster_id)
                for gpu in s.gpus
            }
        )
        asked = " or ".join(job.gpu_models)
        others = [m for m in models if not any(w in m.lower() for w in wanted)]
        for model in others[:MAX_PER_KIND]:
            yield (
                "gpu_model",
                f"GPU model {model} instead of {asked}",
                model,
                replace(job, gpu_models=(model,)),
            )
    now = snapshot.now
    upcoming = [w for w in snapshot.reservations if w.start > now]
    for window in sorted(upcoming, key=lambda w: w.start)[:MAX_PER_KIND]:
        if window.admits(user=job.user, project=job.project, reservation_ids=job.reservation_ids):
            continue
        fits = int((window.start - now).total_seconds()) // 60 * 60
        if MIN_ADVISED_DURATION_S <= fits < job.max_duration_s:
            yield (
                "max_duration",
                f"maxDuration {format_duration(fits)} instead of "
                f"{format_duration(job.max_duration_s)} (ends before reservation {window.name} "
                f"starts at {format_clock(window.start, now)})",
                fits,
                replace(job, max_duration_s=fits, min_duration_s=min(job.min_duration_s, fits)),
            )


__all__ = ["Advice", "Estimate", "advise", "estimate", "head_of_queue", "simulate"]
