"""When a waiting job's room opens behind running jobs that may not be halted for it yet.

A queued job that finds no room may halt running jobs for it (``halts.py``): a private cluster's
owners halt guests, an entitled job's open reservation halts the jobs not entitled to it, a much
lighter user halts much heavier users' jobs (fair share). Only jobs past their minDuration are
ever halted ("GPULab scheduling promises to never automatically stop your job before
minDuration", seed 002), and a reservation halts nobody before it opens. A job waiting behind
such jobs used to be told only "no free GPUs"; it is now told where and when its room opens:

``room on gpu1 from 14:00 UTC: 1 running job there reaches its minDuration then and may be
halted for this job (fair share)``, or ``... reservation R opens then and halts 2 jobs not
entitled to it``.

The moment is the earliest at which, on one slave the job may use, the room free now plus what
the halt-able jobs hold covers the request (each job counted from the moment the rules allow
halting it). It says what the scheduler would do, not what jobs ahead in the queue may take
first, so only the first ``MAX_JOBS`` waiting jobs in queue order get the line.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from .fairness import is_guest, much_heavier, protected, usage_threshold
from .model import QueuedJob, RunningJob
from .placement import Placer
from .reservations import ENTITLED, running_entitled
from .shape import Shape
from .state import EPS, Context, SlaveClass, SlaveRuntime, model_matches
from .text import plural
from .timing import format_clock, min_end

# Waiting jobs (in queue order) that get the line: each costs a look at the running jobs of
# the slaves it may use.
MAX_JOBS = 50

# Why a running job may be halted for the waiting one: (rule, reservation name or "").
FAIR_SHARE = ("fair share", "")
PRIVATE = ("private cluster priority", "")
RESERVATION = "reservation"
Release = tuple[datetime, RunningJob, tuple[str, str]]


class RoomLater:
    """The "room opens at" line of the waiting jobs of one cycle."""

    def __init__(self, ctx: Context, placer: Placer) -> None:
        self.ctx = ctx
        self.placer = placer
        self.asked = 0
        self.cache: dict[tuple[object, ...], str | None] = {}
        # Per slave: the running jobs that still hold their room (not leaving), what they hold
        # together and their heaviest user's usage (lets a job skip slaves without looking).
        # Filled on the first question: most cycles leave no job waiting for room.
        self.holding: dict[str, list[RunningJob]] = {}
        self.totals: dict[str, tuple[int, int, float, float]] = {}
        self.indexed = False

    def _index(self) -> None:
        self.indexed = True
        ctx = self.ctx
        for name, jobs in ctx.running_by_slave.items():
            held = [j for j in jobs if j.id not in ctx.leaving and not j.halting]
            if held:
                self.holding[name] = held
                self.totals[name] = (
                    sum(len(j.gpu_ids) for j in held),
                    sum(len(j.cpu_ids) for j in held),
                    sum(j.memory_gb for j in held),
                    max(ctx.usage_of(j.user) for j in held),
                )

    def line(self, job: QueuedJob, shape: Shape) -> str | None:
        """When the job's room opens behind jobs not yet halt-able for it, or None."""
        if job.interactive or job.gang is not None or self.asked >= MAX_JOBS:
            return None
        self.asked += 1
        config = self.ctx.config
        if not self.indexed:
            self._index()
        key = (
            shape,
            self.ctx.usage_of(job.user),
            job.submitted_at if config.fairness_halt_min_queued_s else None,
        )
        if key not in self.cache:
            self.cache[key] = self._line(job, shape)
        return self.cache[key]

    def _line(self, job: QueuedJob, shape: Shape) -> str | None:
        ctx = self.ctx
        config = ctx.config
        threshold = usage_threshold(ctx.usage_of(job.user), config)
        best: tuple[datetime, int, SlaveRuntime, list[Release]] | None = None
        for cls in self.placer.open_classes(shape):
            owner = cls.private and cls.cluster_id in shape.owner_of
            entitled = any(shape.rel(rr.id) == ENTITLED for rr in cls.reservations)
            for slave in cls.slaves:
                totals = self.totals.get(slave.name)
                if totals is None:
                    continue
                if not (owner or entitled or (config.fairness_halts and totals[3] > threshold)):
                    continue  # no rule lets this job halt anything here
                found = self._slave(job, shape, cls, slave, totals)
                if found is None:
                    continue
                moment, used = found
                if best is None or (moment, slave.rank) < (best[0], best[1]):
                    best = (moment, slave.rank, slave, used)
        if best is None:
            return None
        moment, _, slave, used = best
        clock = format_clock(moment, ctx.now)
        rule, name = used[-1][2]  # the rule of the job whose moment it is
        if rule == RESERVATION and moment > min_end(used[-1][1]):
            return (
                f"room on {slave.name} from {clock}: reservation {name} opens then and halts "
                f"{plural(len(used), 'job')} not entitled to it"
            )
        jobs = plural(len(used), "running job")
        reach = "reaches its" if len(used) == 1 else "reach their"
        kind = f"reservation {name}" if rule == RESERVATION else rule
        return (
            f"room on {slave.name} from {clock}: {jobs} there {reach} minDuration then and "
            f"may be halted for this job ({kind})"
        )

    def _slave(
        self,
        job: QueuedJob,
        shape: Shape,
        cls: SlaveClass,
        slave: SlaveRuntime,
        totals: tuple[int, int, float, float],
    ) -> tuple[datetime, list[Release]] | None:
        """The earliest moment halts may make room on this slave, and the jobs halted."""
        ports = shape.host_ports
        if ports and not ports.isdisjoint(slave.ports):
            return None  # halting frees no port
        wanted = shape.gpu_models
        need_g = shape.gpus - len(slave.matching_free(wanted))
        need_c = shape.cpus - len(slave.free_cpus)
        need_m = shape.memory_gb - slave.free_mem
        if need_g <= 0 and need_c <= 0 and need_m <= EPS:
            return None  # room is there: something else keeps the job off
        if need_g > totals[0] or need_c > totals[1] or need_m > totals[2] + EPS:
            return None  # not even with every job there halted
        now = self.ctx.now
        releases: list[Release] = []
        for running in self.holding[slave.name]:
            found = self._release(job, shape, cls, running)
            if found is not None and found[0] > now:
                releases.append((found[0], running, found[1]))
        releases.sort(key=lambda item: (item[0], item[1].id))
        models = slave.gpu_models
        used = []
        for release in releases:
            running = release[1]
            used.append(release)
            if wanted:
                need_g -= sum(1 for i in running.gpu_ids if model_matches(models[i], wanted))
            else:
                need_g -= len(running.gpu_ids)
            need_c -= len(running.cpu_ids)
            need_m -= running.memory_gb
            if need_g <= 0 and need_c <= 0 and need_m <= EPS:
                return release[0], used
        return None

    def _release(
        self, job: QueuedJob, shape: Shape, cls: SlaveClass, running: RunningJob
    ) -> tuple[datetime, tuple[str, str]] | None:
        """From when the scheduler may halt ``running`` for ``job``, and by which rule."""
        ctx, config = self.ctx, self.ctx.config
        haltable = min_end(running)
        found: list[tuple[datetime, tuple[str, str]]] = []
        if cls.private and cls.cluster_id in shape.owner_of and is_guest(running, cls.rep):
            found.append((haltable, PRIVATE))
        for rr in cls.reservations:
            if shape.rel(rr.id) == ENTITLED and not running_entitled(running, rr.res):
                found.append((max(haltable, rr.res.start), (RESERVATION, rr.res.name)))
        if (
            config.fairness_halts
            and much_heavier(ctx.usage_of(running.user), ctx.usage_of(job.user), config)
            and not protected(running, cls, shape, ctx)
        ):
            queued_long_enough = job.submitted_at + timedelta(
                seconds=config.fairness_halt_min_queued_s
            )
            found.append((max(haltable, queued_long_enough), FAIR_SHARE))
        return min(found, key=lambda item: item[0]) if found else None
