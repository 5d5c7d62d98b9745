"""Making room by halting: choose the smallest set of running jobs that frees one slave for a job.

Used for private-cluster priority and fairness (both in ``fairness.py``); both only
decide which running jobs *may* be halted, this module decides which ones *are*.

Rules shared by every kind of halt:

* only jobs past their minDuration are ever halted (the pool holds nothing else);
* jobs that are already leaving (halting, or halted/cancelled earlier in this cycle) free their
  room at no cost: a queued job waits for them before it halts anything new, and each leaving
  job's room is claimed by one queued job only;
* the chosen set is minimal (no member can be left out) and prefers leaving jobs, then
  borrowed jobs (started above a soft quota level), then restartable jobs, then the heaviest
  users, then the most recently started (least work lost);
* a job within its quotas that finds no room first halts borrowed jobs alone
  (:meth:`HaltPlanner.plan_borrowed`), before any other kind of halt is considered; the slaves
  it then holds room on are closed to the cycle's borrowers (``held_slaves``);
* across slaves the plan with the fewest new halts wins, then the one freeing the fewest GPUs,
  then the slave name (a borrowed plan of one halt that frees no more GPUs than the job takes
  is taken as soon as it is found: :meth:`HaltPlanner.plan_borrowed`);
* a slave where a fixed host port the job asks for is in use is never chosen (halts free
  GPUs, CPUs and memory, not ports), and the room held takes the job's ports on that slave.

Interactive jobs (``InteractiveRoom``, at the end of this module): start now, or make room by
halting and start when the halted jobs end.

GPULab's interactive jobs start at once or fail. Failing while running jobs could be halted to
make room would make them useless on a busy cluster, so (GPULab "favours" them):

* they are tried before every batch job of the cycle (``ordering.py``);
* one that finds no room may halt running jobs past their minDuration on one slave: the smallest
  set the planner above finds (jobs already leaving first, then restartable ones, heavy users,
  the most recently started), never owners' jobs on a private cluster it does not own nor
  jobs entitled to an open reservation it is not entitled to (``fairness.protected``), and at
  most ``max_interactive_halts_per_cycle`` per cycle. The halts are recorded with GPULab's
  reason "Score" (GPULab has no reason of its own for this);
* it then stays queued, explained, holding the room they free, and starts in the first cycle
  after they ended -- but at most ``interactive_halt_wait_s`` (halt grace period plus a margin)
  after the first halt made for it (``QueuedJob.halt_wait_since``), or after its submission
  when none was made for it (it waits behind jobs that were already leaving, or its first cycle
  came that late). Past that it fails;
* when no set of haltable jobs makes room, it fails at once, as before.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from .fairness import protected
from .model import HaltInfo, QueuedJob, RunningJob, format_utc
from .placement import FailureMemo, Placer
from .shape import Shape
from .state import EPS, Context, SlaveClass, SlaveRuntime, model_matches
from .timing import format_duration, past_min_duration

Eligible = Callable[[RunningJob, SlaveClass], bool]
# A job that could make room: (cost: 0 leaving, 1 to halt; the job; GPUs, CPUs, memory it frees).
Candidate = tuple[int, RunningJob, int, int, float]


@dataclass(frozen=True, slots=True)
class RoomPlan:
    slave: SlaveRuntime
    new_halts: tuple[RunningJob, ...]  # to halt now
    waiting_on: tuple[RunningJob, ...]  # already leaving; their room is claimed
    ports: frozenset[int] = frozenset()  # fixed host ports the room is held with


class HaltPlanner:
    """Finds room behind running jobs; remembers claims for the rest of the cycle."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.claimed: set[str] = set()
        # Slaves where a queued job of the cycle holds room behind halted or leaving jobs.
        self.held_slaves: set[str] = set()
        # Shapes no set of borrowed jobs made room for (room only shrinks within a cycle).
        self.borrowed_failed = FailureMemo()
        # Per slave: the jobs that are leaving or may be halted (past minDuration).
        self.pool: dict[str, list[RunningJob]] = {}
        for name, jobs in ctx.running_by_slave.items():
            if name not in ctx.by_name:
                continue
            usable = [j for j in jobs if j.id in ctx.leaving or past_min_duration(j, ctx.now)]
            if usable:
                self.pool[name] = usable
        # Per slave: leaving jobs nobody claimed yet, and the heaviest user among the others
        # (lets a plan skip slaves that cannot help without looking at their jobs).
        self._free_leaving: dict[str, int] = {}
        self._heaviest: dict[str, float] = {}
        # Per slave: borrowed jobs nobody claimed yet (slaves without any are skipped at once).
        # and the GPUs, CPUs and memory they hold (with the free room, a bound of what halting
        # them frees).
        self._borrowed: dict[str, int] = {}
        self._borrowed_room: dict[str, list[float]] = {}
        self._borrowed_ids: set[str] = set()
        for name, jobs in self.pool.items():
            self._free_leaving[name] = sum(1 for j in jobs if j.id in ctx.leaving)
            lent = [j for j in jobs if j.borrowed and j.id not in ctx.leaving]
            self._borrowed[name] = len(lent)
            self._borrowed_room[name] = [
                sum(len(j.gpu_ids) for j in lent),
                sum(len(j.cpu_ids) for j in lent),
                sum(j.memory_gb for j in lent),
            ]
            self._borrowed_ids.update(j.id for j in lent)
            self._heaviest[name] = max(
                (ctx.usage_of(j.user) for j in jobs if j.id not in ctx.leaving), default=-1.0
            )
        # Per slave: what all unclaimed pool jobs hold together, an upper bound of any plan.
        self._totals: dict[str, list[float]] = {
            name: [
                sum(len(j.gpu_ids) for j in jobs),
                sum(len(j.cpu_ids) for j in jobs),
                sum(j.memory_gb for j in jobs),
            ]
            for name, jobs in self.pool.items()
        }
        self._pool_by_class: dict[int, list[SlaveRuntime]] = {}
        # The same, only the slaves where borrowed jobs run (what borrowed plans look at).
        self._lending_by_class: dict[int, list[SlaveRuntime]] = {}
        for cls in ctx.classes:
            members = [s for s in cls.slaves if s.name in self.pool]
            if members:
                self._pool_by_class[cls.id] = members
            lending = [s for s in members if self._borrowed[s.name]]
            if lending:
                self._lending_by_class[cls.id] = lending

    def heaviest_haltable_usage(self) -> float:
        """Largest usage among owners of jobs that could still be halted (0 when none)."""
        leaving, usage_of = self.ctx.leaving, self.ctx.usage_of
        return max(
            (usage_of(j.user) for jobs in self.pool.values() for j in jobs if j.id not in leaving),
            default=0.0,
        )

    @property
    def lends(self) -> bool:
        """Whether borrowed jobs nobody claimed yet run past their minDuration (the cycle's
        first question before it looks for room behind them)."""
        return bool(self._borrowed_ids)

    def plan_borrowed(self, shape: Shape, classes: Iterable[SlaveClass]) -> RoomPlan | None:
        """Room for a job within its quotas behind borrowed jobs (past their minDuration, as
        every halt) and leaving ones, with as many halts as it takes; None when none makes
        room. Jobs the shape may never halt (``fairness.protected``) stay.

        Only slaves where borrowed jobs run are looked at, those with too little room even
        behind all of them skipped; the best plan as :meth:`plan` ranks them, except that one
        halt freeing no GPU the job does not take ends the search (every in-limit job that
        finds no room asks, so plans are many: no other slave does better but by its name).
        """
        if not self._borrowed_ids or self.borrowed_failed.known(shape):
            return None
        ctx = self.ctx

        def eligible(victim: RunningJob, cls: SlaveClass) -> bool:
            return victim.borrowed and not protected(victim, cls, shape, ctx)

        best: RoomPlan | None = None
        best_key: tuple[int, int, int] | None = None
        for cls in classes:
            if cls.single:
                slaves = [s for s in cls.slaves if self._borrowed.get(s.name)]
            else:
                slaves = self._lending_by_class.get(cls.id, [])
            for slave in slaves:
                name = slave.name
                if not self._borrowed[name] or (
                    not self._free_leaving[name] and self._short_behind_borrowed(shape, slave)
                ):
                    continue
                found = self._plan_slave(shape, cls, slave, eligible, len(ctx.running))
                if found is None:
                    continue
                plan, freed = found
                key = (len(plan.new_halts), freed, slave.rank)
                if best_key is None or key < best_key:
                    best, best_key = plan, key
                if key[0] <= 1 and freed <= shape.gpus:
                    return best
        if best is None:
            self.borrowed_failed.add(shape)
        return best

    def _slaves(self, cls: SlaveClass) -> list[SlaveRuntime]:
        if cls.single:
            return [s for s in cls.slaves if s.name in self.pool]
        return self._pool_by_class.get(cls.id, [])

    def plan(
        self,
        shape: Shape,
        classes: Iterable[SlaveClass],
        eligible: Eligible | None,
        max_new: int,
        victim_usage_above: float | None = None,
    ) -> RoomPlan | None:
        """Best room for the shape behind leaving jobs and (when ``eligible``) new halts.

        ``victim_usage_above``: a necessary condition of ``eligible`` (the victim's user has more
        usage than this), used to skip slaves without looking at their jobs.
        """
        best: RoomPlan | None = None
        best_key: tuple[int, int, int] | None = None
        may_halt = eligible is not None and max_new > 0
        for cls in classes:
            for slave in self._slaves(cls):
                name = slave.name
                if not self._free_leaving[name] and (
                    not may_halt
                    or (
                        victim_usage_above is not None
                        and self._heaviest[name] <= victim_usage_above
                    )
                ):
                    continue
                found = self._plan_slave(shape, cls, slave, eligible, max_new)
                if found is None:
                    continue
                plan, freed = found
                key = (len(plan.new_halts), freed, slave.rank)
                if best_key is None or key < best_key:
                    best, best_key = plan, key
        return best

    def _short_behind_borrowed(self, shape: Shape, slave: SlaveRuntime) -> bool:
        """Whether the slave's free room and all its borrowed jobs' are too little."""
        gpus, cpus, memory = self._borrowed_room[slave.name]
        return (
            len(slave.free_gpus) + gpus < shape.gpus
            or len(slave.free_cpus) + cpus < shape.cpus
            or slave.free_mem + memory + EPS < shape.memory_gb
        )

    def _plan_slave(
        self,
        shape: Shape,
        cls: SlaveClass,
        slave: SlaveRuntime,
        eligible: Eligible | None,
        max_new: int,
    ) -> tuple[RoomPlan, int] | None:
        ports = shape.host_ports  # HOST_PORTS.fits, inline: this runs per slave and plan
        if ports and not ports.isdisjoint(slave.ports):
            return None  # a port it asks for is taken there: halting frees no port
        wanted = shape.gpu_models
        need_g = shape.gpus - len(slave.matching_free(wanted))
        need_c = shape.cpus - len(slave.free_cpus)
        need_m = shape.memory_gb - slave.free_mem
        if need_g <= 0 and need_c <= 0 and need_m <= EPS:
            return None  # room is there: something else keeps the job off this slave
        total_g, total_c, total_m = self._totals[slave.name]
        if need_g > total_g or need_c > total_c or need_m > total_m + EPS:
            return None  # even every job of the pool would not be enough
        leaving, claimed = self.ctx.leaving, self.claimed
        may_halt = eligible if max_new > 0 else None
        models = slave.gpu_models
        # (cost, job, GPUs, CPUs, memory it frees): each size computed once per job.
        candidates: list[Candidate] = []
        for job in self.pool[slave.name]:
            if job.id in claimed:
                continue
            if job.id in leaving:
                cost = 0
            elif may_halt is not None and may_halt(job, cls):
                cost = 1
            else:
                continue
            if not wanted:
                gpus = len(job.gpu_ids)
            else:
                gpus = sum(
                    1 for i in job.gpu_ids if i in models and model_matches(models[i], wanted)
                )
            candidates.append((cost, job, gpus, len(job.cpu_ids), job.memory_gb))
        if not candidates:
            return None
        # Quick bound: everything together must be enough.
        if (
            sum(item[2] for item in candidates) < need_g
            or sum(item[3] for item in candidates) < need_c
            or sum(item[4] for item in candidates) + EPS < need_m
        ):
            return None
        usage_of = self.ctx.usage_of
        candidates.sort(
            key=lambda item: (
                item[0],
                not item[1].borrowed,
                not item[1].restartable,
                -usage_of(item[1].user),
                -item[1].started_at.timestamp(),
                item[1].id,
            )
        )
        chosen = _minimal_cover(need_g, need_c, need_m, candidates)
        if chosen is None:
            return None
        new = tuple(item[1] for item in chosen if item[0])
        if len(new) > max_new:
            return None
        waiting = tuple(item[1] for item in chosen if not item[0])
        freed = sum(len(item[1].gpu_ids) for item in chosen)
        return RoomPlan(slave, new, waiting, shape.host_ports), freed

    def claim(self, plan: RoomPlan) -> None:
        totals = self._totals[plan.slave.name]
        self.held_slaves.add(plan.slave.name)
        for job in plan.new_halts + plan.waiting_on:
            if job.id in self._borrowed_ids:
                self._borrowed_ids.discard(job.id)
                self._borrowed[plan.slave.name] -= 1
                room = self._borrowed_room[plan.slave.name]
                room[0] -= len(job.gpu_ids)
                room[1] -= len(job.cpu_ids)
                room[2] -= job.memory_gb
            self.claimed.add(job.id)
            self.ctx.leaving.add(job.id)
            totals[0] -= len(job.gpu_ids)
            totals[1] -= len(job.cpu_ids)
            totals[2] -= job.memory_gb
        self._free_leaving[plan.slave.name] -= len(plan.waiting_on)
        plan.slave.ports.update(plan.ports)  # later jobs of the cycle must not take them
        if plan.slave.cls is not None:
            plan.slave.cls.touch()


def _minimal_cover(
    need_g: int, need_c: int, need_m: float, candidates: list[Candidate]
) -> list[Candidate] | None:
    """A small set covering the needs: greedy in preference order, pruned, or one job if better.

    ``candidates`` are (cost, job, GPUs, CPUs, memory) sorted by preference. Returns such
    items or None.
    """

    def covers(items: list[Candidate]) -> bool:
        return (
            sum(item[2] for item in items) >= need_g
            and sum(item[3] for item in items) >= need_c
            and sum(item[4] for item in items) + EPS >= need_m
        )

    chosen = []
    left_g, left_c, left_m = need_g, need_c, need_m
    for item in candidates:
        g, c, m = item[2], item[3], item[4]
        if (left_g > 0 and g) or (left_c > 0 and c) or (left_m > EPS and m > 0):
            chosen.append(item)
            left_g, left_c, left_m = left_g - g, left_c - c, left_m - m
            if left_g <= 0 and left_c <= 0 and left_m <= EPS:
                break
    else:
        return None
    # Drop members that turned out unnecessary, least preferred first.
    for item in reversed(list(chosen)):
        rest = [other for other in chosen if other is not item]
        if covers(rest):
            chosen = rest
    # One job alone (``covers([item])`` without building a list per candidate).
    single = next(
        (item for item in candidates
         if item[2] >= need_g and item[3] >= need_c and item[4] + EPS >= need_m),
        None,
    )  # fmt: skip
    if single is not None:
        cost_chosen = (sum(item[0] for item in chosen), len(chosen))
        if (single[0], 1) < cost_chosen:
            chosen = [single]
    return chosen


def halt_info(
    ctx: Context,
    *,
    reason: str,
    slave: SlaveRuntime,
    started: Iterable[str],
    halted: Iterable[RunningJob],
    started_users: Iterable[str] = (),
) -> HaltInfo:
    """GPULab's HaltInfo for halts on one slave; scores are the users' decayed usage."""
    halted = tuple(halted)
    return HaltInfo(
        reason=reason,
        time=ctx.now,
        started_job_uuids=tuple(started),
        halted_job_uuids=tuple(j.id for j in halted),
        slave_name=slave.name,
        slave_instance=slave.state.instance_id or slave.name,
        started_job_scores=tuple(ctx.usage_of(u) for u in started_users),
        halted_job_scores=tuple(ctx.usage_of(j.user) for j in halted),
    )


# --- interactive jobs -------------------------------------------------------------------------


FAIL_PREFIX = "interactive job could not start at once: "


class InteractiveRoom:
    """Room behind halted jobs for the interactive jobs of one cycle."""

    def __init__(self, ctx: Context, planner: HaltPlanner, placer: Placer) -> None:
        self.ctx = ctx
        self.planner = planner
        self.placer = placer
        self.halts = 0  # new halts made for interactive jobs in this cycle
        # Shapes with no room even behind every haltable job: later interactive jobs of the
        # shape find fewer jobs left to halt and a smaller budget, so they cannot do better.
        self.failed = FailureMemo()
        self.limit = timedelta(seconds=ctx.config.interactive_halt_wait_s)

    def find(self, job: QueuedJob, shape: Shape) -> RoomPlan | str | None:
        """A plan to hold room with, a reason to fail now, or None (no room: fail as before)."""
        ctx = self.ctx
        if not ctx.config.interactive_halts:
            return None
        since = job.halt_wait_since
        if ctx.now - (since or job.submitted_at) > self.limit:
            if since is None:
                return None  # too late to start waiting: fails with the usual reasons
            return (
                f"{FAIL_PREFIX}the jobs halted for it did not free room within "
                f"{format_duration(self.limit.total_seconds())}"
            )
        if self.planner.lends:
            lent = self.planner.plan_borrowed(shape, self.placer.open_classes(shape))
            if lent is not None:
                return lent  # borrowed jobs first, outside the budget below (as for batch jobs)
        if self.failed.known(shape):
            return None

        def eligible(victim: RunningJob, cls: SlaveClass) -> bool:
            return not protected(victim, cls, shape, ctx)

        budget = ctx.config.max_interactive_halts_per_cycle - self.halts
        plan = self.planner.plan(shape, self.placer.open_classes(shape), eligible, budget)
        if plan is None:
            self.failed.add(shape)
            return None
        self.halts += len(plan.new_halts)
        return plan

    def deadline(self, job: QueuedJob, plan: RoomPlan) -> datetime:
        """When the job fails if it has not started by then."""
        if job.halt_wait_since is not None:
            return job.halt_wait_since + self.limit
        # Halts made now start the clock now (they become its halt_wait_since).
        return (self.ctx.now if plan.new_halts else job.submitted_at) + self.limit

    def explanation(self, job: QueuedJob, plan: RoomPlan) -> str:
        return (
            "interactive job: starts when they end, fails if not started by "
            f"{format_utc(self.deadline(job, plan))}"
        )
