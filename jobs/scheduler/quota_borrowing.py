"""Borrowing: a job above a soft quota level starts only on room no in-limit job could use.

A job within every hard level of its quotas but above a soft one (``QuotaLedger.above_soft``)
is a *borrower*. One cycle (``core.py``) treats borrowers so:

1. every in-limit job is tried first, in queue order; borrowers are put aside
   (:meth:`Borrowing.defers`, :meth:`Borrowing.defers_gang`). An in-limit job that finds no
   room halts running borrowed jobs before anything else (``HaltPlanner.plan_borrowed``: only
   those past their minDuration, as every halt);
2. then the borrowers, in queue order, are placed on what is left (:meth:`Borrowing.run`):
   through the same placer, never by halting anything, and never on a slave where an in-limit
   job of the cycle holds room behind halted or leaving jobs (those slaves are closed for the
   pass). An in-limit job left waiting for room found none on any slave, and room only shrinks
   within a cycle, so nothing a borrower takes could have been its. What they start is marked
   borrowed (``Start.borrowed``; the bridge keeps it on the Job row);
3. a borrower left waiting says why first: ``above the soft level of project nlp: ...; may
   borrow idle GPUs``, then where it found no room.

Counters only grow within a cycle, so a borrower is still above its soft level when its turn
comes; it may have passed a hard one meanwhile, and then waits with that line.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from .model import QueuedJob, Start
from .state import SlaveRuntime

# A slave closed to borrowers, with the room it had: (slave, GPUs, CPUs, memory).
Closed = tuple[SlaveRuntime, list[int], list[int], float]


class Borrowing:
    """The borrowers of one cycle; ``cycle`` is core's ``_Cycle`` (context, shapes, placer,
    planner, limits, decisions), untyped here as in gang.py: naming it would make the two
    modules import each other."""

    def __init__(self, cycle: Any) -> None:
        self.cycle = cycle
        self.deferred: list[QueuedJob] = []
        # Per borrower id: the soft level it is above (its first explanation while it waits).
        self.lines: dict[str, str] = {}
        # Gangs put aside, with their tasks (the first task is in ``deferred``).
        self.gangs: dict[str, list[QueuedJob]] = {}
        self.running = False  # the borrowing pass has begun: nothing is put aside any more
        # The quota counters when some scope has a soft level (asked once per queued job: a
        # cycle without soft levels pays one test each).
        ledger = cycle.ctx.quotas
        self.ledger = ledger if ledger is not None and ledger.any_soft else None

    def above_soft(self, job: QueuedJob) -> str | None:
        return None if self.ledger is None else self.ledger.above_soft(job)

    def defers(self, job: QueuedJob) -> bool:
        """Put aside a job (within its hard levels) that is above a soft level."""
        if self.ledger is None or self.running:
            return False
        line = self.ledger.above_soft(job)
        if line is None:
            return False
        self.deferred.append(job)
        self.lines[job.id] = line
        return True

    def defers_gang(self, job: QueuedJob, tasks: list[QueuedJob]) -> bool:
        """Put aside a gang whose tasks together pass a soft level (asked for each task in
        queue order; the first one decides, as ``GangScheduler.schedule`` does)."""
        gang = job.gang
        if self.running or gang is None:
            return False
        if gang in self.gangs:
            return True
        line = self.above_soft(replace(job, gpus=sum(task.gpus for task in tasks)))
        if line is None:
            return False
        self.gangs[gang] = tasks
        self.deferred.append(job)
        for task in tasks:
            self.lines[task.id] = line
        return True

    def run(self, gangs: Any) -> None:
        """Place the borrowers on what the in-limit jobs left (``gangs``: the cycle's
        ``GangScheduler``)."""
        if not self.deferred:
            return
        self.running = True
        cycle = self.cycle
        closed = [_close(cycle.ctx.by_name[name]) for name in sorted(cycle.planner.held_slaves)]
        try:
            for job in self.deferred:
                first = len(cycle.decisions)
                if job.gang is not None:
                    tasks = self.gangs[job.gang]
                    if cycle._held(replace(job, gpus=sum(t.gpus for t in tasks))) is not None:
                        for task in tasks:  # a hard level now: the gang says only that
                            self.lines.pop(task.id, None)
                    gangs.schedule(job)
                else:
                    self._place(job)
                self._mark(first)
        finally:
            for item in closed:
                _reopen(item)

    def _place(self, job: QueuedJob) -> None:
        cycle = self.cycle
        reason = cycle._held(job)  # a hard level passed since it was put aside
        if reason is not None:
            del self.lines[job.id]
            cycle._wait_or_fail(job, (reason,))
            return
        shape = cycle.shapes[job.id]
        slave = cycle.placer.place(shape)
        if slave is not None:
            cycle.decisions.append(cycle.placer.commit(job, shape, slave))
            cycle.limits.record_start(job)
            cycle._settle(job)
        elif job.interactive:
            cycle.interactive_waiting.append((job, shape))  # fails, explained, at the end
        else:
            cycle.waiting.setdefault(shape, []).append(job)

    def _mark(self, first: int) -> None:
        """Mark the starts decided since ``first`` borrowed."""
        decisions = self.cycle.decisions
        for index in range(first, len(decisions)):
            decision = decisions[index]
            if isinstance(decision, Start):
                decisions[index] = replace(decision, borrowed=True)
                self.lines.pop(decision.job_id, None)

    def line(self, job_id: str) -> str | None:
        """The soft level a borrower left waiting is above, or None."""
        return self.lines.get(job_id) if self.lines else None

    def annotate(self, explanations: dict[str, tuple[str, ...]], cap: int) -> None:
        """Put the soft line first in the explanations of the borrowers left waiting."""
        for job_id, line in self.lines.items():
            lines = explanations.get(job_id)
            if lines is not None and lines[:1] != (line,):
                explanations[job_id] = (line, *lines)[:cap]


def _close(slave: SlaveRuntime) -> Closed:
    """Take all free room of a slave away for the borrowing pass (an in-limit job holds room
    there behind halted jobs, and what it needs beyond them is part of that free room)."""
    saved = (slave, slave.free_gpus, slave.free_cpus, slave.free_mem)
    before = len(slave.free_gpus)
    # Memory below zero: not even a job asking for none fits.
    slave.free_gpus, slave.free_cpus, slave.free_mem = [], [], -1.0
    if slave.cls is not None:
        slave.cls.move(slave, before)
        slave.cls.touch()
    return saved


def _reopen(saved: Closed) -> None:
    slave, gpus, cpus, memory = saved
    slave.free_gpus, slave.free_cpus, slave.free_mem = gpus, cpus, memory
    if slave.cls is not None:
        slave.cls.move(slave, 0)
        slave.cls.touch()


__all__ = ["Borrowing"]
