"""Fairness halts ("Score"): a much lighter user's job may take the place of heavy users' jobs.

A queued job may halt running jobs only when all of these hold:

* it found no room anywhere (it never halts when it could start elsewhere now);
* it is not interactive (interactive jobs make room by their own rules: ``interactive.py``);
* fairness halts are enabled, the cycle's budget of them is not spent, and it has been queued for
  at least ``fairness_halt_min_queued_s``;
* each victim is past its minDuration and belongs to a user whose decayed usage is "much
  heavier": the queued user's usage is below ``ratio`` times the victim's AND the difference
  exceeds ``fairness_halt_min_usage_gap`` (so near-zero usages never trigger halts);
* on a private cluster it does not own, only guest jobs may be victims (owners always win), and
  jobs entitled to an open reservation are not halted by jobs that are not.

The room freed this way is held for the job (its victims are claimed); the job itself stays
queued until they end.
"""

from __future__ import annotations

from collections.abc import Callable

from .model import QueuedJob, RunningJob, SchedulerConfig
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
