"""Start-time estimates and what-if advice, by simulating the scheduler's own cycle forward.

Pure, like the rest of the package. The simulation replays ``run_cycle`` at the moments when
something frees or blocks room:

* every running job ends when jobs like it ended (``runtimes.py``: the history of run times of
  the user's jobs of the same name, the same image, the user's, the site's), never later than
  its maxDuration; without a history (``Snapshot.history`` None), at its maxDuration;
* the estimate is the start with every job at the median of its runs; the range around it comes
  from the same simulation with the 5th and the 95th percentiles (``SCENARIOS``);
* reservations open and close as scheduled (the cycle applies them, halts included);
* queued jobs are tried in the scheduler's queue order; jobs *behind* the estimated ones are
  left out (cheap, and the estimate is what the job can count on when nobody jumps ahead),
  except the other tasks of a gang in the head, which starts whole or not at all;
* what a cycle starts runs as long as its own history says; what it halts or cancels is gone
  the halt grace period and a tick later, and so are the jobs already halting; an interactive
  job that waits for jobs halted for it counts its wait from the first halt (as the tick does);
  fair-share usage does not move;
* quotas (``quota_ledger.py``) are counted as the time goes by: what the simulated runs hold
  adds to each scope's usage this month, and hour budgets renew at their ``renews_at`` (an
  event of its own), so a job that a budget keeps waiting starts when the budget allows it, not
  when a slave frees up. A target that a quota holds back now carries the quota's line
  (``Estimate.quota``) whatever its start.

Events are the ends of running jobs, reservation starts and ends, and queued jobs' notBefore;
those within a tenth of the time simulated so far are taken together (``COALESCE``), at most
``max_events`` cycles are run and nothing beyond ``horizon_s`` is looked at, so the cost is
bounded whatever the queue. A job that starts in the first cycle gets ``now``.

:func:`advise` proposes concrete changes (fewer GPUs, another cluster or GPU model, a
maxDuration short enough to finish before a reservation or to fit the hour budget of the quota
that holds the job back) and keeps those that the same simulation says start sooner; a change
that brings a quota-held job within its limits says so ("within the limits of project nlp"). It offers only what the portal would accept: no variant that no
registered slave could run (the submit check, ``explain.impossible_reason``), never a
maxDuration below the minDuration of the advised request (both are lowered together, and the
change says so), and only reservations on slaves the job may use.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from .core import run_cycle
from .explain import impossible_reason
from .filters import Env
from .model import HOUR, Halt, QueuedJob, QuotaLimit, RunningJob, Snapshot, Start
from .ordering import order_queue
from .pipeline import DEFAULT_PIPELINE
from .quota_ledger import BUDGETS, QuotaLedger, scope_name
from .runtimes import RunTimes
from .shape import ShapeFactory
from .state import build_context
from .text import plural
from .timing import format_clock, format_duration, max_end

MAX_EVENTS = 64
HORIZON_S = 30 * 24 * 3600
# Halted and cancelled jobs are treated as gone this long after the halt grace period
# (``SchedulerConfig.halt_grace_s``) from the cycle that stopped them: a tick.
TICK_S = 5
# Events within this fraction of the time simulated so far are simulated as one cycle.
COALESCE = 0.1
# Run-time quantiles: the estimate (median), and the earliest and latest of its range (in
# the replay of a recorded week, tests/scheduler/test_estimate_replay.py, 69 in 100 jobs that
# waited started inside it).
MEDIAN, EARLY, LATE = 0.5, 0.05, 0.95
SCENARIOS = (EARLY, MEDIAN, LATE)
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
    never: it fails or can never run), after how many simulated cycles, and why not if not.

    ``earliest``/``latest``: the range of :func:`estimate_range` (the starts with shorter and
    longer runs of the jobs ahead; ``latest`` None: not within the horizon); both equal
    ``start`` when there is no history to vary.

    ``quota``: the line of the quota that holds the job back now (the scheduler's own words),
    None when no limit does: then the wait is the slaves'."""

    job_id: str
    start: datetime | None
    cycles: int
    reason: str | None = None
    earliest: datetime | None = None
    latest: datetime | None = None
    quota: str | None = None


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
    most ``limit`` of them, and every other task of the gangs among them (a gang starts whole:
    without its tasks further back it would never start)."""
    wanted = set(targets)
    ordered = order_queue(snapshot.queued, snapshot.usage)
    head = ordered if limit is None else ordered[:limit]
    last = max((i for i, job in enumerate(head) if job.id in wanted), default=-1)
    head = head[: last + 1]
    gangs = {job.gang for job in head if job.gang is not None}
    if gangs:
        inside = {job.id for job in head}
        head += [job for job in ordered if job.gang in gangs and job.id not in inside]
    return tuple(head)


def simulate(
    snapshot: Snapshot,
    targets: Sequence[str],
    *,
    max_events: int = MAX_EVENTS,
    horizon_s: int = HORIZON_S,
    before: datetime | None = None,
    max_position: int = MAX_QUEUE_POSITION,
    quantile: float = MEDIAN,
) -> dict[str, Estimate]:
    """Estimated starts of the ``targets`` (queued job ids) in one simulation.

    ``before``: only starts earlier than this matter (what-if variants); the simulation stops
    there. ``quantile``: the run times of the jobs (``runtimes.RunTimes``).
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
    runtimes = RunTimes(snapshot.history, quantile)
    leave = timedelta(seconds=snapshot.config.halt_grace_s + TICK_S)
    running = list(snapshot.running)
    # When each running job is expected to end (a halting one: once the grace period is over).
    ends = {job.id: _expected_end(job, now, runtimes, leave) for job in running}
    held = quota_lines(snapshot, left)
    # What each run holds from ``now`` on (the quotas' usage grows with it): (owner, rates, since).
    spans: dict[str, tuple[str, str, tuple[float, float, float], datetime]] = {
        job.id: (job.user, job.project, _held_rates(job), now) for job in running
    }
    t = now
    cycles = 0
    reason: str | None = None
    while left:
        if cycles >= max_events:
            reason = f"not started within {plural(max_events, 'simulated scheduling round')}"
            break
        running = [job for job in running if ends[job.id] > t]
        # Bucket counts come from the simulated running jobs (the snapshot's are of now).
        state = replace(
            snapshot,
            now=t,
            running=tuple(running),
            queued=tuple(queued),
            bucket_counts={},
            quotas=_quotas_at(snapshot, t, spans, ends),
        )
        result = run_cycle(state, explain=False)
        cycles += 1
        by_id = {job.id: job for job in queued}
        done: set[str] = set()
        halted_for: set[str] = set()
        for decision in result.decisions:
            if isinstance(decision, Start):
                job = by_id[decision.job_id]
                running.append(_as_running(job, decision, t))
                limit = max(0, job.max_duration_s)
                ends[job.id] = t + timedelta(seconds=runtimes.seconds(job.id, limit_s=limit))
                spans[job.id] = (job.user, job.project, (job.gpus, job.cpus, job.memory_gb), t)
                done.add(job.id)
                if job.id in left:
                    found[job.id] = Estimate(job.id, t, cycles, quota=held.get(job.id))
                    left.discard(job.id)
            elif decision.job_id in by_id:  # failed (notAfter, interactive)
                done.add(decision.job_id)
                if decision.job_id in left:
                    found[decision.job_id] = Estimate(
                        decision.job_id,
                        None,
                        cycles,
                        decision.reason,
                        quota=held.get(decision.job_id),
                    )
                    left.discard(decision.job_id)
            else:  # halted or cancelled running job: its room comes back soon
                ends[decision.job_id] = min(ends[decision.job_id], t + leave)
                if isinstance(decision, Halt):
                    halted_for.update(decision.halt_info.started_job_uuids)
        # An interactive job's wait for the jobs halted for it counts from the first halt.
        queued = [
            replace(job, halt_wait_since=t)
            if job.id in halted_for and job.interactive and job.halt_wait_since is None
            else job
            for job in queued
            if job.id not in done
        ]
        if not left:
            break
        nxt = _next_event(t, running, queued, snapshot, ends)
        if nxt is not None:
            # Moments closer together than a tenth of the wait so far are taken as one: on a
            # busy site every running job's end is an event, and one cycle each would spend
            # the budget within minutes (a job then starts at most that much later).
            nxt = max(nxt, t + (t - now) * COALESCE)
        if nxt is None or nxt > horizon:
            reason = f"not started within {format_duration((horizon - now).total_seconds())}"
            break
        t = nxt
    for job_id in left:
        found[job_id] = Estimate(job_id, None, cycles, reason, quota=held.get(job_id))
    return found


def quota_lines(snapshot: Snapshot, targets: Iterable[str]) -> dict[str, str]:
    """The line of the quota that holds each of these queued jobs back now (none: not held)."""
    if not snapshot.quotas:
        return {}
    wanted = set(targets)
    ledger = QuotaLedger.of(snapshot)
    found = {}
    for job in snapshot.queued:
        if job.id in wanted:
            line = ledger.blocked(job)
            if line is not None:
                found[job.id] = line
    return found


def _held_rates(job: RunningJob) -> tuple[float, float, float]:
    """What one second of a running job counts against the GPU, CPU and memory budgets."""
    return (float(len(job.gpu_ids)), float(len(job.cpu_ids)), job.memory_gb)


def _has_budget(q: QuotaLimit) -> bool:
    """Whether a scope has an hour budget, hard or soft (the levels that read its usage)."""
    return any(
        getattr(q, f"{budget}{level}") is not None
        for budget, _, _ in BUDGETS
        for level in ("", "_soft")
    )


def _quotas_at(
    snapshot: Snapshot,
    t: datetime,
    spans: dict[str, tuple[str, str, tuple[float, float, float], datetime]],
    ends: dict[str, datetime],
) -> tuple[QuotaLimit, ...]:
    """The snapshot's limits as they stand at ``t``: what the runs held since ``now`` (or since
    the budget renewed, when it did before ``t``) added to each scope's usage. Only the first
    renewal is seen (the horizon is about a month); the count limits need nothing here, the
    ledger counts the simulated running jobs."""
    quotas = snapshot.quotas
    if not quotas or t <= snapshot.now:
        return quotas
    if not any(_has_budget(q) for q in quotas):
        return quotas  # counts only (GPUs, jobs at once): usage is not asked
    now = snapshot.now
    totals: dict[tuple[datetime, tuple[str, ...]], list[float]] = {}
    bases = {q.renews_at if q.renews_at is not None and q.renews_at <= t else now for q in quotas}
    for job_id, (user, project, rates, since) in spans.items():
        end = min(ends.get(job_id, t), t)
        for base in bases:
            seconds = (end - max(since, base)).total_seconds()
            if seconds <= 0:
                continue
            for key in (("project", project), ("user", user), ("member", user, project)):
                row = totals.setdefault((base, key), [0.0, 0.0, 0.0])
                for i, rate in enumerate(rates):
                    row[i] += rate * seconds
    found = []
    for q in quotas:
        renewed = q.renews_at is not None and q.renews_at <= t
        base = q.renews_at if renewed and q.renews_at is not None else now
        extra = totals.get((base, q.key), (0.0, 0.0, 0.0))
        start = (0.0, 0.0, 0.0) if renewed else (q.used_gpu_s, q.used_cpu_s, q.used_mem_gb_s)
        found.append(
            replace(
                q,
                used_gpu_s=start[0] + extra[0],
                used_cpu_s=start[1] + extra[1],
                used_mem_gb_s=start[2] + extra[2],
                renews_at=None if renewed else q.renews_at,
            )
        )
    return tuple(found)


def estimate(snapshot: Snapshot, job_id: str, **kw: Any) -> Estimate:
    return simulate(snapshot, [job_id], **kw)[job_id]


def estimate_range(snapshot: Snapshot, job_id: str, **kw: Any) -> Estimate:
    """The estimate (median run times) with its range (5th and 95th percentiles)."""
    mid = estimate(snapshot, job_id, quantile=MEDIAN, **kw)
    if snapshot.history is None or mid.start is None or mid.start <= snapshot.now:
        return replace(mid, earliest=mid.start, latest=mid.start)
    # Only a start before the estimate's matters for the earliest (the simulation stops
    # there); the latest gets half the event budget (None: "later than that").
    early = estimate(snapshot, job_id, quantile=EARLY, before=mid.start, **kw).start
    budget = max(1, kw.pop("max_events", MAX_EVENTS) // 2)
    late = estimate(snapshot, job_id, quantile=LATE, max_events=budget, **kw).start
    # Shorter runs ahead may reorder what starts when: the range always holds the estimate.
    return replace(
        mid,
        earliest=min(early, mid.start) if early is not None else mid.start,
        latest=max(late, mid.start) if late is not None else None,
    )


def _expected_end(job: RunningJob, now: datetime, runtimes: RunTimes, leave: timedelta) -> datetime:
    """When a running job of the snapshot is expected to give its room back."""
    if job.halting:
        return min(max_end(job), now + leave)
    limit = max(0, job.max_duration_s - job.run_seconds_before)
    elapsed = max(0.0, (now - job.started_at).total_seconds())
    return job.started_at + timedelta(
        seconds=runtimes.seconds(job.id, limit_s=limit, elapsed_s=elapsed)
    )


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
        borrowed=start.borrowed,
    )


def _next_event(
    t: datetime,
    running: Sequence[RunningJob],
    queued: Sequence[QueuedJob],
    snapshot: Snapshot,
    ends: dict[str, datetime],
) -> datetime | None:
    moments = [ends[job.id] for job in running]
    for window in snapshot.reservations:
        moments += [window.start, window.end]
    moments += [job.not_before for job in queued if job.not_before is not None]
    # A renewed hour budget may let a job start.
    moments += [q.renews_at for q in snapshot.quotas if q.renews_at is not None]
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
    holder = holding_quota(snapshot, job) if baseline.quota is not None else None
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
        if (
            baseline.quota is not None
            and result.quota is None
            and holder is not None
            and scope_name(holder) not in change
        ):
            # The limit that held it back lets this shape through: the change says so.
            change = f"{change} (within the limits of {scope_name(holder)})"
        best = found.get(kind)
        if best is None or result.start < best.start:
            found[kind] = Advice(kind, change, result.start, value)
    return sorted(found.values(), key=lambda a: (a.start, a.kind))


def holding_quota(snapshot: Snapshot, job: QueuedJob) -> QuotaLimit | None:
    """The limit that keeps this queued job waiting now (the narrowest that does), or None."""
    if not snapshot.quotas:
        return None
    ledger = QuotaLedger.of(snapshot)
    line = ledger.blocked(job)
    if line is None:
        return None
    # The ledger's line begins with the scope's name, and the narrowest scope is asked first.
    for limit in ledger.applying(job):
        if line.startswith(scope_name(limit) + " "):
            return limit
    return None


def budget_fit_s(snapshot: Snapshot, job: QueuedJob) -> tuple[int, QuotaLimit, str] | None:
    """The longest maxDuration (seconds) that fits every hour budget of the job's scopes now,
    with the budget that bounds it (limit, unit); None when no budget bounds the job below its
    maxDuration. Only whole hours are offered from an hour up, whole 10 minutes below."""
    if not snapshot.quotas:
        return None
    ledger = QuotaLedger.of(snapshot)
    rates = (job.gpus, job.cpus, job.memory_gb)
    best: tuple[float, QuotaLimit, str] | None = None
    for count in ledger.of_owner(job.user, job.project):
        for index, cap, used in count.budgets:
            rate = rates[index]
            if not rate:
                continue
            room = (cap - used - count.committed[index]) / rate
            if best is None or room < best[0]:
                best = (room, count.limit, BUDGETS[index][2])
    if best is None or best[0] >= job.max_duration_s:
        return None
    room, limit, unit = best
    step = HOUR if room >= HOUR else MIN_ADVISED_DURATION_S
    fits = int(max(0.0, room)) // step * step
    return fits, limit, unit


def _sooner(start: datetime, baseline: datetime | None) -> bool:
    return baseline is None or start < baseline


def _variants(
    snapshot: Snapshot, job: QueuedJob, usable_clusters: Iterable[int] | None
) -> Iterator[tuple[str, str, object, QueuedJob]]:
    """(kind, change, new value, variant job), fewest changes first; only variants the submit
    check would accept (some registered slave could run them)."""
    for kind, change, value, variant in _candidate_variants(snapshot, job, usable_clusters):
        if impossible_reason(variant, snapshot.slaves, config=snapshot.config) is None:
            yield kind, change, value, variant


def _eligible_slaves(snapshot: Snapshot, job: QueuedJob) -> set[str]:
    """The slaves the job may use at all (its identity filters: cluster, slaveName, private
    access, GPU model, CUDA, features, size): advice cites only constraints on those."""
    ctx = build_context(snapshot)
    shape = ShapeFactory(
        now=snapshot.now,
        config=snapshot.config,
        private_owners=ctx.private_owners,
        rrs=ctx.reservations,
    ).shape(job)
    passing, _ = DEFAULT_PIPELINE.identity(shape, ctx.classes, Env(snapshot.config, ctx))
    return {name for cls in passing for name in cls.names}


def _candidate_variants(
    snapshot: Snapshot, job: QueuedJob, usable_clusters: Iterable[int] | None
) -> Iterator[tuple[str, str, object, QueuedJob]]:
    # At most three smaller GPU counts, largest first: one less, half, one.
    for gpus in sorted({n for n in (job.gpus - 1, job.gpus // 2, 1) if 0 < n < job.gpus})[::-1]:
        yield (
            "gpus",
            f"{plural(gpus, 'GPU')} instead of {job.gpus}",
            gpus,
            replace(job, gpus=gpus),
        )
    # A maxDuration that fits the hour budget that holds the job back (GPUs x maxDuration).
    fit = budget_fit_s(snapshot, job)
    if fit is not None and MIN_ADVISED_DURATION_S <= fit[0] < job.max_duration_s:
        fits, limit, unit = fit
        yield (
            "max_duration",
            _duration_change(job, fits) + f" (fits the {unit} budget of {scope_name(limit)})",
            fits,
            replace(job, max_duration_s=fits, min_duration_s=min(job.min_duration_s, fits)),
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
    if not upcoming:
        return
    eligible = _eligible_slaves(snapshot, job)
    mine = [s for s in slaves if s.name in eligible]
    for window in sorted(upcoming, key=lambda w: w.start)[:MAX_PER_KIND]:
        if window.admits(user=job.user, project=job.project, reservation_ids=job.reservation_ids):
            continue
        if not any(window.covers(s) for s in mine):
            continue  # it holds no slave the job could use: it is not what keeps it waiting
        fits = int((window.start - now).total_seconds()) // 60 * 60
        if not MIN_ADVISED_DURATION_S <= fits < job.max_duration_s:
            continue
        yield (
            "max_duration",
            f"{_duration_change(job, fits)} (ends before reservation {window.name} starts at "
            f"{format_clock(window.start, now)})",
            fits,
            replace(job, max_duration_s=fits, min_duration_s=min(job.min_duration_s, fits)),
        )


def _duration_change(job: QueuedJob, fits: int) -> str:
    change = f"maxDuration {format_duration(fits)} instead of {format_duration(job.max_duration_s)}"
    if job.min_duration_s > fits:
        # A maxDuration below the minDuration is refused at submit: lower both. (A job
        # whose minDuration already fits starts before a window as a guest anyway.)
        change += (
            f" and minDuration {format_duration(fits)} instead of "
            f"{format_duration(job.min_duration_s)}"
        )
    return change


__all__ = [
    "SCENARIOS",
    "Advice",
    "Estimate",
    "advise",
    "budget_fit_s",
    "estimate",
    "estimate_range",
    "head_of_queue",
    "holding_quota",
    "quota_lines",
    "simulate",
]
