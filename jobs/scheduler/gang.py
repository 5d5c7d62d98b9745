"""Gang placement: every task of a multi-task job starts in the same cycle, or none does.

A gang's tasks are ordinary queued jobs that share ``QueuedJob.gang`` (and say how many tasks
the gang has in ``gang_size``). When the cycle reaches the first of them in queue order, the
whole gang is tried at once:

1. the gang must be complete in the queue (a task on hold, or still held elsewhere, keeps it
   waiting) and its first task must not be held back (notBefore, bucket, user limits);
2. each task, largest first, is placed through the ordinary :class:`~.placement.Placer` (same
   filters, scorers and packing as any job, so tasks may land on different slaves),
   *tentatively*: the placer
   then records no failure memo and no skip set, because the room those would describe is only
   borrowed;
3. if a task finds no room, every tentative placement of the gang is rolled back (free GPUs,
   CPUs, memory, host ports, bucket index, reservation budgets, exactly as before) and the gang
   waits whole, explained; no GPU is held for a gang that cannot start. Otherwise its ``Start``
   decisions are kept.

A gang that failed is remembered by the shapes of its tasks: room only shrinks during a cycle,
so a later gang of the same shapes fails too without another try.

Gangs never halt running jobs to make room (they wait for room like any job that does not
qualify for halts); a scheduler halt of one task is turned into a halt of the whole gang by the
gangs app (gangs/whole.py, on jobs.signals.job_halt_requested).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from .explain import shape_reasons
from .filters import FREE_RESOURCES, HOST_PORTS
from .model import QueuedJob, Start
from .reservations import ResRuntime
from .shape import Shape
from .state import SlaveRuntime


@dataclass(slots=True)
class _Saved:
    """A slave's and its reservations' bookkeeping before one tentative placement."""

    slave: SlaveRuntime
    free_gpus: list[int]
    free_cpus: list[int]
    free_mem: float
    ports: set[int]
    budgets: list[tuple[ResRuntime, int, int]]


def _save(slave: SlaveRuntime) -> _Saved:
    cls = slave.cls
    budgets = [
        (rr, rr.non_entitled_gpus, rr.committed_gpus) for rr in (cls.reservations if cls else ())
    ]
    return _Saved(
        slave,
        list(slave.free_gpus),
        list(slave.free_cpus),
        slave.free_mem,
        set(slave.ports),
        budgets,
    )


def _restore(saved: _Saved) -> None:
    slave = saved.slave
    now_free = len(slave.free_gpus)
    slave.free_gpus = saved.free_gpus
    slave.free_cpus = saved.free_cpus
    slave.free_mem = saved.free_mem
    slave.ports = saved.ports
    if slave.cls is not None:
        slave.cls.move(slave, now_free)  # back to the bucket of its restored free count
        slave.cls.touch()
    for rr, non_entitled, committed in saved.budgets:
        rr.non_entitled_gpus = non_entitled
        rr.committed_gpus = committed


class GangScheduler:
    """Places the gangs of one cycle; ``cycle`` is core's ``_Cycle`` (shapes, placer, limits,
    decisions, explanations)."""

    # ``cycle``: core's _Cycle, untyped here: naming it would make core and gang import each other.
    def __init__(self, cycle: Any, live: list[QueuedJob]) -> None:
        self.cycle = cycle
        self.members: dict[str, list[QueuedJob]] = {}
        for job in live:
            if job.gang is not None:
                self.members.setdefault(job.gang, []).append(job)
        self.done: set[str] = set()
        self.failed: set[tuple[Shape, ...]] = set()
        # Gangs left waiting: (tasks, the shape that found no room or None, tasks placed, why).
        self.waiting: list[tuple[list[QueuedJob], Shape | None, int, str | None]] = []

    def schedule(self, job: QueuedJob) -> None:
        """Called for every gang task in queue order; the first one places the whole gang."""
        gang = job.gang
        assert gang is not None, "schedule() is called for gang tasks only"
        if gang in self.done:
            return
        self.done.add(gang)
        tasks = self.members[gang]
        cycle = self.cycle
        if len(tasks) < job.gang_size:
            self.waiting.append(
                (tasks, None, 0, f"{len(tasks)} of its {job.gang_size} tasks are queued")
            )
            return
        # Limits look at the gang as a whole: its GPUs together against a per-user GPU cap.
        held = cycle._held(replace(job, gpus=sum(task.gpus for task in tasks)))
        if held is not None:
            self.waiting.append((tasks, None, 0, held))
            return
        shapes = tuple(cycle.shapes[task.id] for task in tasks)
        if shapes in self.failed:
            self.waiting.append((tasks, None, 0, "a gang of the same tasks found no room"))
            return
        placer = cycle.placer
        saved: list[_Saved] = []
        starts: list[Start] = []
        missing: Shape | None = None
        # Largest tasks first (first-fit decreasing): small tasks placed first could take the
        # CPUs or memory a big task needs on the only slaves with its GPUs.
        order = sorted(
            zip(tasks, shapes, strict=True),
            key=lambda pair: (-pair[1].gpus, -pair[1].cpus, -pair[1].memory_gb),
        )
        placer.tentative = True
        try:
            for task, shape in order:
                slave = placer.place(shape)
                if slave is None:
                    missing = shape
                    break
                saved.append(_save(slave))
                starts.append(placer.commit(task, shape, slave))
        finally:
            placer.tentative = False
        if missing is not None:
            for item in reversed(saved):
                _restore(item)
            self.failed.add(shapes)
            self.waiting.append((tasks, missing, len(starts), None))
            return
        cycle.decisions.extend(starts)
        for task in tasks:
            cycle.limits.record_start(task)
            cycle._settle(task)

    def _room(self, shape: Shape) -> int:
        """How many slaves could take one task of this shape now (final state of the cycle)."""
        placer = self.cycle.placer
        return sum(
            1
            for cls in placer.open_classes(shape)
            for slave in cls.slaves
            if FREE_RESOURCES.fits(shape, slave) and HOST_PORTS.fits(shape, slave)
        )

    def explain(self) -> None:
        """Why each waiting gang waits, on the final state of the cycle (once per shape):
        ``gang of 4 tasks waits whole: needs 4 tasks of 4 GPU(s) on cluster 2; 2 of them
        could be placed now, 1 slave(s) can take one more; no GPU is held meanwhile``."""
        cycle = self.cycle
        cache: dict[Shape, tuple[str, ...]] = {}
        room: dict[Shape, int] = {}
        for tasks, shape, placed, why in self.waiting:
            n = len(tasks)
            lines: tuple[str, ...]
            if shape is None:
                lines = (f"gang of {n} tasks waits whole: {why}",)
            else:
                if shape not in cache:
                    cache[shape] = shape_reasons(shape, cycle.ctx, cycle.env, cycle.placer.identity)
                    room[shape] = self._room(shape)
                lines = (
                    f"gang of {n} tasks waits whole: needs {_needs(cycle, tasks)}; {placed} of "
                    f"them could be placed now, the next ({_one(shape)}) found no room, "
                    f"{room[shape]} slave(s) can take one such task now; no GPU is held "
                    "meanwhile",
                    *cache[shape],
                )
            for task in tasks:
                cycle.explanations[task.id] = lines[: cycle.ctx.config.max_explanations]


def _one(shape: Shape) -> str:
    where = f" on cluster {shape.cluster_id}" if shape.cluster_id is not None else ""
    return f"{shape.gpus} GPU(s), {shape.cpus} CPU(s), {shape.memory_gb:g} GB{where}"


def _needs(cycle: Any, tasks: list[QueuedJob]) -> str:
    """``2 tasks of 0 GPU(s), ... and 2 tasks of 4 GPU(s), ...`` in task order."""
    counts: dict[Shape, int] = {}
    for task in tasks:
        shape = cycle.shapes[task.id]
        counts[shape] = counts.get(shape, 0) + 1
    return " and ".join(f"{count} task(s) of {_one(shape)}" for shape, count in counts.items())


__all__ = ["GangScheduler"]
