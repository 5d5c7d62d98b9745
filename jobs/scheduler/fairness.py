"""Fairness halts ("Score"): a much lighter user's job may take the place of heavy users' jobs.

A queued job may halt running jobs only when all of these hold:

* it found no room anywhere (it never halts when it could start elsewhere now);
* it is not interactive (interactive jobs make room by their own rules: ``halts.InteractiveRoom``);
* fairness halts are enabled, the cycle's budget of them is not spent, and it has been queued for
  at least ``fairness_halt_min_queued_s``;
* each victim is past its minDuration and belongs to a user whose decayed usage is "much
  heavier": the queued user's usage is below ``ratio`` times the victim's AND the difference
  exceeds ``fairness_halt_min_usage_gap`` (so near-zero usages never trigger halts);
* on a private cluster it does not own, only guest jobs may be victims (owners always win), and
  jobs entitled to an open reservation are not halted by jobs that are not.

The room freed this way is held for the job (its victims are claimed); the job itself stays
queued until they end.

Private clusters ("Private Cluster Priority"): the owners' projects have absolute priority.

* Jobs of other projects run there only as guests: no clusterId in their request and a
  minDuration of at most ``private_guest_max_min_duration_s`` (see ``PrivateAccessFilter``).
* While an owner job waits for room on its cluster, no guest is started there
  (``OwnerDemandFilter``): the demand counted here drops as owner jobs are served.
* An owner job that finds no room anywhere halts guests past their minDuration on one slave of
  its cluster; the freed room is held for it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from .model import QueuedJob, RunningJob, SchedulerConfig, SlaveState
from .reservations import ENTITLED, running_entitled
from .shape import Shape
from .state import Context, SlaveClass


def much_heavier(victim_usage: float, job_usage: float, config: SchedulerConfig) -> bool:
    """Whether a victim's user used the service enough more than the queued job's user."""
    return (
        job_usage < config.fairness_halt_usage_ratio * victim_usage
        and victim_usage - job_usage > config.fairness_halt_min_usage_gap
    )


def usage_threshold(job_usage: float, config: SchedulerConfig) -> float:
    """Victims' users must have more usage than this (a necessary part of :func:`much_heavier`)."""
    ratio = config.fairness_halt_usage_ratio
    by_ratio = job_usage / ratio if ratio > 0 else float("inf")
    return max(by_ratio, job_usage + config.fairness_halt_min_usage_gap)


def may_halt_for(job: QueuedJob, ctx: Context, halts_so_far: int) -> bool:
    """Whether this queued job may cause new Score halts in this cycle at all."""
    config = ctx.config
    return (
        config.fairness_halts
        and not job.interactive
        and halts_so_far < config.max_fairness_halts_per_cycle
        and (ctx.now - job.submitted_at).total_seconds() >= config.fairness_halt_min_queued_s
    )


def victim_rule(
    job: QueuedJob, shape: Shape, ctx: Context
) -> Callable[[RunningJob, SlaveClass], bool]:
    """The predicate choosing which running jobs this queued job may halt."""
    job_usage = ctx.usage_of(job.user)
    config = ctx.config

    def eligible(victim: RunningJob, cls: SlaveClass) -> bool:
        if not much_heavier(ctx.usage_of(victim.user), job_usage, config):
            return False
        return not protected(victim, cls, shape, ctx)

    return eligible


def protected(victim: RunningJob, cls: SlaveClass, shape: Shape, ctx: Context) -> bool:
    """Running jobs a queued job of this shape may never halt, whatever its priority: owners'
    jobs on a private cluster it does not own, and jobs entitled to an open reservation it is
    not entitled to."""
    if cls.private and cls.cluster_id not in shape.owner_of:
        owners = ctx.private_owners.get(cls.cluster_id, frozenset())
        if victim.project in owners:
            return True
    for rr in cls.reservations:
        if rr.active and shape.rel(rr.id) != ENTITLED and running_entitled(victim, rr.res):
            return True
    return False


# --- private clusters -------------------------------------------------------------------------


def is_guest(job: RunningJob, slave: SlaveState) -> bool:
    """A running job on a private cluster that its project does not own."""
    return slave.cluster_private and job.project not in slave.cluster_owner_projects


def owner_classes(shape: Shape, candidates: Sequence[SlaveClass]) -> list[SlaveClass]:
    """The candidate classes on private clusters the job's project owns."""
    return [cls for cls in candidates if cls.private and cls.cluster_id in shape.owner_of]


def count_owner_demand(
    ctx: Context,
    jobs: Sequence[QueuedJob],
    shapes: Mapping[str, Shape],
    candidates: Callable[[Shape], list[SlaveClass]],
    held: Callable[[QueuedJob], bool],
) -> dict[str, tuple[int, ...]]:
    """Count queued owner jobs that want room on their private clusters.

    Jobs held for other reasons (notBefore, limits) do not count: they could not use the room.
    Returns, per counted job, the clusters it counts on (to release when it is served).
    """
    counted: dict[str, tuple[int, ...]] = {}
    for job in jobs:
        shape = shapes[job.id]
        if not shape.owner_of or held(job):
            continue
        clusters = tuple(
            sorted({cls.cluster_id for cls in owner_classes(shape, candidates(shape))})
        )
        if clusters:
            counted[job.id] = clusters
            for cluster_id in clusters:
                ctx.owner_demand[cluster_id] = ctx.owner_demand.get(cluster_id, 0) + 1
    return counted


def guest_victim(victim: RunningJob, cls: SlaveClass) -> bool:
    """An owner job may halt any guest (past minDuration) on its own private cluster."""
    return is_guest(victim, cls.rep)
