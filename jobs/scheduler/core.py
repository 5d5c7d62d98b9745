"""One scheduling cycle: ``run_cycle(snapshot) -> CycleResult``.

The pipeline, in order:

1. running jobs that reached maxDuration are cancelled;
2. open reservations halt running jobs that are not entitled and past their minDuration;
3. queued jobs whose notAfter passed fail;
4. the rest, interactive jobs first, then in fair-share order (``ordering.py``), each either
   waits (notBefore, bucket, user limits), starts on the best slave (filters, then scorers),
   holds room behind halted jobs (borrowed jobs first, then for interactive jobs, private
   cluster owners, then much lighter users), fails (interactive jobs that cannot start now nor
   make room), or waits for room; jobs above a soft quota level are put aside;
5. those borrowers, in the same order, start on what is left or wait (``quota_borrowing.py``);
6. every job left waiting gets its explanations, computed once per request shape.
"""

from __future__ import annotations

import gc
from collections import defaultdict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from . import fairness
from . import reservations as res_rules
from .explain import shape_reasons
from .filters import Env
from .gang import GangScheduler
from .halts import HaltPlanner, InteractiveRoom, RoomPlan, halt_info
from .model import (
    CycleResult,
    Decision,
    Fail,
    Halt,
    HaltReason,
    QueuedJob,
    RunningJob,
    Snapshot,
    Start,
)
from .ordering import order_queue
from .placement import FailureMemo, Placer
from .quota_borrowing import Borrowing
from .room_later import RoomLater
from .shape import Shape, ShapeFactory
from .state import Context, Limits, build_context
from .timing import max_duration_cancel, next_wakeup, not_after_reason, not_before_reason


@contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic garbage collection inside. A cycle (and a tick around it) allocates hundreds
    of thousands of objects that live until it ends, so the collector runs hundreds of times and
    its older-generation passes walk the whole snapshot again and again: measured 0.05-0.1 s of
    a 10k-queue cycle and 0.4-0.8 s of a tick. What it leaves is freed by reference counting;
    cycles wait for the next pass. Nests: only the outermost pause enables it again."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def run_cycle(snapshot: Snapshot, *, explain: bool = True) -> CycleResult:
    """Decide what starts, halts, fails and is cancelled now, and why the rest waits.

    ``explain=False``: the decisions only, without the explanations of the jobs left waiting
    nor the next wakeup (start estimates simulate many cycles and read neither).
    """
    if snapshot.now.tzinfo is None or snapshot.now.utcoffset() is None:
        raise ValueError("Snapshot.now must be timezone-aware")
    with gc_paused():
        return _Cycle(snapshot, explain=explain).run()


class _Cycle:
    def __init__(self, snapshot: Snapshot, *, explain: bool = True) -> None:
        self.snapshot = snapshot
        self.explain = explain
        self.ctx: Context = build_context(snapshot)
        self.env = Env(snapshot.config, self.ctx)
        self.decisions: list[Decision] = []
        self.explanations: dict[str, tuple[str, ...]] = {}
        self.halted: set[str] = set()  # running jobs halted in this cycle
        self.cancelled: set[str] = set()  # running jobs cancelled in this cycle

    def run(self) -> CycleResult:
        self._cancel_overdue()
        self._reservation_halts()
        res_rules.compute_budgets(self.ctx.reservations, self.ctx.running, self.ctx.leaving)
        live = self._fail_expired()
        self._prepare(live)
        gangs = GangScheduler(self, live)
        for job in live:
            if job.gang is None:
                self._schedule(job)
            elif not self.borrowing.defers_gang(job, gangs.members[job.gang]):
                gangs.schedule(job)  # the first task of a gang places all of it, or none
        self.borrowing.run(gangs)  # jobs above a soft level, on what the others left
        if not self.explain:
            self._explain_waiting(batch=False)  # interactive jobs that wait still fail
            return CycleResult(tuple(self.decisions), {}, None)
        self._explain_waiting()
        gangs.explain()
        self.borrowing.annotate(self.explanations, max(1, self.ctx.config.max_explanations))
        wakeup = next_wakeup(
            self.snapshot,
            leaving=self.halted | self.cancelled,
            started=[d.job_id for d in self.decisions if isinstance(d, Start)],
            waiting=bool(self.explanations),
        )
        return CycleResult(tuple(self.decisions), dict(self.explanations), wakeup)

    # --- running jobs ----------------------------------------------------------------------

    def _cancel_overdue(self) -> None:
        for job in self.ctx.running:
            cancel = max_duration_cancel(job, self.ctx.now)
            if cancel is not None:
                self.decisions.append(cancel)
                self.ctx.leaving.add(job.id)
                self.cancelled.add(job.id)

    def _reservation_halts(self) -> None:
        ctx = self.ctx
        for rr in ctx.reservations:
            victims = res_rules.activation_victims(
                rr, ctx.running_by_slave, ctx.leaving, ctx.usage, ctx.now
            )
            by_slave: dict[str, list[RunningJob]] = defaultdict(list)
            for job in victims:
                by_slave[job.slave].append(job)
            for name in sorted(by_slave):
                self._halt(HaltReason.RESERVATION, name, by_slave[name], started=())

    def _halt(
        self,
        reason: HaltReason,
        slave_name: str,
        victims: Sequence[RunningJob],
        started: Sequence[QueuedJob],
    ) -> None:
        ctx = self.ctx
        info = halt_info(
            ctx,
            reason=reason,
            slave=ctx.by_name[slave_name],
            started=[j.id for j in started],
            halted=victims,
            started_users=[j.user for j in started],
        )
        for job in victims:
            self.decisions.append(Halt(job.id, reason, info))
            ctx.leaving.add(job.id)
            self.halted.add(job.id)

    # --- queued jobs -----------------------------------------------------------------------

    def _fail_expired(self) -> list[QueuedJob]:
        """Fail jobs whose notAfter passed; the others in the order the cycle tries them."""
        live = []
        for job in order_queue(self.snapshot.queued, self.ctx.usage):
            reason = not_after_reason(job, self.ctx.now)
            if reason is not None:
                self.decisions.append(Fail(job.id, reason))
            else:
                live.append(job)
        return live

    def _prepare(self, live: list[QueuedJob]) -> None:
        ctx, now = self.ctx, self.ctx.now
        self.limits = Limits(self.snapshot, quotas=ctx.quotas)
        factory = ShapeFactory(
            now=now, config=ctx.config, private_owners=ctx.private_owners, rrs=ctx.reservations
        )
        self.shapes = {job.id: factory.shape(job) for job in live}
        self.position = {job.id: i for i, job in enumerate(live)}
        self.placer = Placer(ctx, self.env)
        self.borrowing = Borrowing(self)
        # Borrowers wait for room after every owner job: they are no owner demand.
        above_soft = self.borrowing.above_soft
        self.demand = fairness.count_owner_demand(
            ctx,
            live,
            self.shapes,
            self.placer.candidates,
            lambda job: self._held(job) is not None or above_soft(job) is not None,
        )
        self.planner = HaltPlanner(ctx)
        self.interactive = InteractiveRoom(ctx, self.planner, self.placer)
        self.heaviest = self.planner.heaviest_haltable_usage()
        self.score_halts = 0
        # Shapes for which no room could be found behind running jobs, with new halts allowed
        # (True) or only behind jobs already leaving (False). Later jobs have at least as much
        # usage (queue order) and fewer jobs left to halt, so they cannot do better.
        self.halt_failed = {True: FailureMemo(), False: FailureMemo()}
        self.waiting: dict[Shape, list[QueuedJob]] = {}
        self.interactive_waiting: list[tuple[QueuedJob, Shape]] = []

    def _held(self, job: QueuedJob) -> str | None:
        """Why the job may not start now whatever the room: notBefore, bucket, user limits."""
        return (
            not_before_reason(job, self.ctx.now)
            or self.limits.blocked(job)
            or self.placer.pipeline.held(job, self.shapes[job.id], self.env)
        )

    def _settle(self, job: QueuedJob) -> None:
        """The job no longer waits for room on its private clusters."""
        ctx = self.ctx
        for cluster_id in self.demand.pop(job.id, ()):
            ctx.owner_demand[cluster_id] -= 1
            if ctx.owner_demand[cluster_id] == 0:
                self.placer.invalidate()  # guests may use that cluster again

    def _schedule(self, job: QueuedJob) -> None:
        """Start, fail, hold room for, or leave waiting one queued job."""
        shape = self.shapes[job.id]
        reason = self._held(job)
        if reason is not None:
            self._settle(job)
            self._wait_or_fail(job, (reason,))
            return
        if self.borrowing.defers(job):
            return  # above a soft level: tried after every in-limit job
        slave = self.placer.place(shape)
        if slave is not None:
            self.decisions.append(self.placer.commit(job, shape, slave))
            self.limits.record_start(job)
            self._settle(job)
            return
        if job.interactive:
            # Start now or fail, unless halting jobs makes room: it then waits for them, a
            # bounded time (InteractiveRoom in halts.py).
            self._settle(job)
            found = self.interactive.find(job, shape)
            if isinstance(found, RoomPlan):
                self._hold(job, found, HaltReason.SCORE)
                self.explanations[job.id] += (self.interactive.explanation(job, found),)
                self.planner.claim(found)
            elif found is not None:
                self.decisions.append(Fail(job.id, found))
            else:
                self.interactive_waiting.append((job, shape))
            return
        room = self._find_room(job, shape)
        if room is None:
            self.waiting.setdefault(shape, []).append(job)
            return
        plan, kind = room
        self._settle(job)
        self._hold(job, plan, kind)
        if kind == HaltReason.SCORE:
            self.score_halts += len(plan.new_halts)
        self.planner.claim(plan)

    def _find_room(self, job: QueuedJob, shape: Shape) -> tuple[RoomPlan, HaltReason] | None:
        """Room behind running jobs: borrowed ones first, then for private cluster owners,
        then by fair share."""
        ctx, planner = self.ctx, self.planner
        if planner.lends:
            lent = planner.plan_borrowed(shape, self.placer.open_classes(shape))
            if lent is not None:
                return lent, HaltReason.SCORE
        if shape.owner_of:
            owned = fairness.owner_classes(shape, self.placer.open_classes(shape))
            plan = planner.plan(shape, owned, fairness.guest_victim, max_new=len(ctx.running))
            if plan is not None:
                return plan, HaltReason.CLUSTER
        job_usage = ctx.usage_of(job.user)
        full = fairness.may_halt_for(job, ctx, self.score_halts) and fairness.much_heavier(
            self.heaviest, job_usage, ctx.config
        )
        if self.halt_failed[True].known(shape) or (
            not full and self.halt_failed[False].known(shape)
        ):
            return None
        plan = planner.plan(
            shape,
            self.placer.open_classes(shape),
            fairness.victim_rule(job, shape, ctx) if full else None,
            ctx.config.max_fairness_halts_per_cycle - self.score_halts,
            fairness.usage_threshold(job_usage, ctx.config),
        )
        if plan is None:
            self.halt_failed[full].add(shape)
            return None
        return plan, HaltReason.SCORE

    def _explain_waiting(self, *, batch: bool = True) -> None:
        """Explanations on the final state of the cycle, computed once per shape (``batch``
        False: only for the interactive jobs left waiting, which fail with them)."""
        cache: dict[Shape, tuple[str, ...]] = {}

        def reasons_for(shape: Shape) -> tuple[str, ...]:
            if shape not in cache:
                cache[shape] = shape_reasons(
                    shape, self.ctx, self.env, self.placer.identity, self.placer.pipeline
                )
            return cache[shape]

        # Where and when halts may make room for the first waiting jobs (room_later.py): a
        # wait behind a running job's minDuration or a reservation's start says so.
        later = RoomLater(self.ctx, self.placer)
        cap = max(1, self.ctx.config.max_explanations)
        waiting = [(job, shape) for shape, jobs in self.waiting.items() if batch for job in jobs]
        waiting.sort(key=lambda item: self.position[item[0].id])
        borrowing = self.borrowing
        for job, shape in waiting:
            lines = reasons_for(shape)
            # A borrower halts nothing: no room opens for it behind running jobs.
            opens = later.line(job, shape) if borrowing.line(job.id) is None else None
            self.explanations[job.id] = lines if opens is None else (opens, *lines)[:cap]
        for job, shape in self.interactive_waiting:
            soft = borrowing.line(job.id)
            reasons = reasons_for(shape)
            self._wait_or_fail(job, reasons if soft is None else (soft, *reasons))

    def _hold(self, job: QueuedJob, plan: RoomPlan, kind: HaltReason) -> None:
        """Halt the plan's victims for this job; the job waits for the room they free."""
        if plan.new_halts:
            self._halt(kind, plan.slave.name, plan.new_halts, started=(job,))
        count = len(plan.new_halts) + len(plan.waiting_on)
        # Jobs cancelled for their maxDuration also free room soon; don't call them halted.
        what = "ending" if any(j.id in self.cancelled for j in plan.waiting_on) else "halted"
        self.explanations[job.id] = (
            f"waiting for {count} {what} job(s) on {plan.slave.name} to free room",
        )

    def _wait_or_fail(self, job: QueuedJob, reasons: tuple[str, ...]) -> None:
        if job.interactive:
            self.decisions.append(
                Fail(job.id, "interactive job could not start at once: " + "; ".join(reasons[:3]))
            )
        else:
            self.explanations[job.id] = reasons
