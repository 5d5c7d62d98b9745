"""Find the best slave for a request shape and take its resources.

Cost control, since one cycle may see 10,000 queued jobs and 1,000 slaves:

* static filters run once per (shape, slave class), and the passing classes are cached;
* inside a class, slaves sit in buckets by free GPU count, so the best-packed slave with room is
  the first suitable one of the lowest sufficient bucket: no scan of full slaves;
* a shape that found no room is remembered as failed for the rest of the cycle -- free room only
  shrinks during a cycle (halted jobs keep theirs until they end) -- so later jobs of that shape,
  or of a shape that differs only by asking for more, cost a lookup (:class:`FailureMemo`). The
  only thing that can open room for a failed shape within a cycle is the last waiting owner job
  of a private cluster being served; :meth:`Placer.invalidate` then forgets the failures;
* slaves whose CPUs or memory are too short for a shape, or that have one of its fixed host
  ports in use, are skipped by that shape from then on;
* what a class offered a shape (its best member and score, or nothing) is kept until a
  member's room or ports change (:meth:`SlaveClass.touch`): a placement changes one class, so
  the next job of the same shape searches only that one again.

The slaves that passed every filter are ranked by score plugins (``SCORERS``, at the end of
this module), each 0-100. Which plugins run and their weights are data: ``SchedulerConfig.scorer_weights``, a tuple of
(name, weight) in the order they are added up (``PORTAL_SCHEDULER_SCORER_WEIGHTS`` through the
bridge). The total is the weighted sum; ties go to the slave whose name sorts first, so a cycle
is deterministic. Every plugin except packing gives all members of a slave class the same score,
so the placement search only needs the best-packed member of each class.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from . import reservations as res_rules
from .filters import Env, Filter
from .model import QueuedJob, SchedulerConfig, Start
from .pipeline import DEFAULT_PIPELINE, Pipeline
from .shape import Shape
from .state import EPS, Context, SlaveClass, SlaveRuntime

# (every room filter a shape needs, those the class index does not answer)
RoomFilters = tuple[tuple[Filter, ...], tuple[Filter, ...]]


class FailureMemo:
    """Request shapes known to fail, and every shape that asks for at least as much.

    Shapes that differ only in GPU/CPU/memory amounts share a "rest"; if a request failed, a
    larger request with the same rest fails too (room only shrinks within a cycle).
    """

    def __init__(self) -> None:
        self._failed: dict[tuple[object, ...], list[tuple[int, int, float]]] = {}
        self._rest: dict[Shape, tuple[object, ...]] = {}

    def _rest_of(self, shape: Shape) -> tuple[object, ...]:
        rest = self._rest.get(shape)
        if rest is None:
            rest = self._rest[shape] = (
                shape.gpu_models,
                shape.features,
                shape.min_cuda,
                shape.cluster_id,
                shape.slave_name,
                shape.owner_of,
                shape.guest_ok,
                shape.res,
                shape.host_ports,
            )
        return rest

    def known(self, shape: Shape) -> bool:
        failed = self._failed.get(self._rest_of(shape))
        if not failed:
            return False
        g, c, m = shape.gpus, shape.cpus, shape.memory_gb
        for fg, fc, fm in failed:  # a plain loop: any() over a generator costs twice as much
            if g >= fg and c >= fc and m >= fm:
                return True
        return False

    def add(self, shape: Shape) -> None:
        self._failed.setdefault(self._rest_of(shape), []).append(
            (shape.gpus, shape.cpus, shape.memory_gb)
        )

    def clear(self) -> None:
        self._failed.clear()


class Placer:
    """Placement search and bookkeeping for one cycle: walks the pipeline's filters in order
    (identity, runtime, dynamic, room), then ranks with the configured scorers."""

    def __init__(self, ctx: Context, env: Env, pipeline: Pipeline = DEFAULT_PIPELINE) -> None:
        self.ctx = ctx
        self.env = env
        self.pipeline = pipeline
        self.scoring = Scoring(ctx.config)
        self._identity: dict[Shape, tuple[list[SlaveClass], str | None]] = {}
        self._candidates: dict[Shape, list[SlaveClass]] = {}
        self._failed = FailureMemo()
        self._skip: dict[Shape, set[int]] = {}
        # Per shape: the dynamic and room filters it needs (the indexed room filter apart).
        self._dynamic: dict[Shape, tuple[Filter, ...]] = {}
        self._room: dict[Shape, RoomFilters] = {}
        self._indexed = pipeline.indexed is not None
        # Per shape and class id: (the class's version, (-score, rank) of its best member and
        # that member, or None twice). A placement changes one class; the others' answers stand.
        self._found: dict[
            Shape, dict[int, tuple[int, tuple[float, int] | None, SlaveRuntime | None]]
        ] = {}
        # While a gang is placed tentatively (gang.py) its room is only borrowed: failures
        # and skips seen then are not remembered for the rest of the cycle.
        self.tentative = False

    def identity(self, shape: Shape) -> tuple[list[SlaveClass], str | None]:
        """:meth:`Pipeline.identity` over all classes, memoised per shape."""
        found = self._identity.get(shape)
        if found is None:
            found = self._identity[shape] = self.pipeline.identity(
                shape, self.ctx.classes, self.env
            )
        return found

    def candidates(self, shape: Shape) -> list[SlaveClass]:
        """Classes (or the pinned slave's view) that pass every identity and runtime filter."""
        found = self._candidates.get(shape)
        if found is None:
            passing, _ = self.identity(shape)
            pipeline = self.pipeline
            found = pipeline.passing(shape, passing, self.env, pipeline.runtime)
            self._candidates[shape] = found
        return found

    def open_classes(self, shape: Shape) -> list[SlaveClass]:
        """Candidates that the dynamic class filters (owner demand, budgets) also let through."""
        active = self._dynamic.get(shape)
        if active is None:
            active = self._dynamic[shape] = self.pipeline.relevant(
                shape, self.pipeline.dynamic, self.env
            )
        return self.pipeline.survivors(shape, self.candidates(shape), self.env, active)

    def invalidate(self) -> None:
        """Forget failed shapes (room opened for them: a private cluster's owners are served)."""
        self._failed.clear()

    def place(self, shape: Shape) -> SlaveRuntime | None:
        """The best slave with room for the shape now, or None."""
        if self._failed.known(shape):
            return None
        best: SlaveRuntime | None = None
        best_key: tuple[float, int] | None = None
        score = self.scoring.total
        room = self._room.get(shape) or self._room_filters(shape)
        found = self._found.get(shape)
        if found is None:
            found = self._found[shape] = {}
        for cls in self.open_classes(shape):
            entry = found.get(cls.id)
            if entry is not None and entry[0] == cls.version:
                _, key, slave = entry
            else:
                hit = self._find(shape, cls, room)
                if hit is None:
                    key = slave = None
                else:
                    slave, free, total = hit
                    key = (-score(shape, cls, free, total), slave.rank)
                if not cls.single:  # a one-slave view: its slave's real class is the one touched
                    found[cls.id] = (cls.version, key, slave)
            if key is not None and (best_key is None or key < best_key):
                best, best_key = slave, key
        if best is None and not self.tentative:
            self._failed.add(shape)
        return best

    def _room_filters(self, shape: Shape) -> RoomFilters:
        """(every room filter the shape needs, those the class index does not answer)."""
        pipeline = self.pipeline
        room = pipeline.relevant(shape, pipeline.room, self.env)
        found = self._room[shape] = (room, tuple(f for f in room if f is not pipeline.indexed))
        return found

    def _find(
        self, shape: Shape, cls: SlaveClass, filters: RoomFilters
    ) -> tuple[SlaveRuntime, int, int] | None:
        """Best-packed member of the class with room: (slave, its free GPUs, its GPUs).

        ``filters``: :meth:`_room_filters` of the shape.
        """
        wanted = shape.gpu_models
        room, unindexed = filters
        if cls.single or not self._indexed or cls.match_mode(wanted) != "all":
            # Pinned slave, or a class where only some GPU models match: look at each member.
            best = None
            for slave in cls.slaves:
                for plugin in room:
                    if not plugin.fits(shape, slave):
                        break
                else:
                    free = len(slave.matching_free(wanted))
                    if best is None or free < best[1]:
                        best = (slave, free)
            if best is None:
                return None
            return best[0], best[1], self.env.matching_gpus(cls.rep, wanted)
        # The indexed filter (free resources): members with enough free GPUs come from the
        # class's buckets, lowest sufficient count first; CPUs and memory are checked here.
        skip = self._skip.get(shape)
        cpus = shape.cpus
        memory = shape.memory_gb - EPS
        slaves = self.ctx.slaves
        buckets = cls.buckets
        for free in range(shape.gpus, cls.ngpus + 1):
            for rank in buckets[free]:
                if skip is not None and rank in skip:
                    continue
                slave = slaves[rank]
                if (
                    len(slave.free_cpus) >= cpus
                    and slave.free_mem >= memory
                    and (not unindexed or all(f.fits(shape, slave) for f in unindexed))
                ):
                    return slave, free, cls.ngpus
                if self.tentative:
                    continue
                if skip is None:
                    skip = self._skip[shape] = set()
                skip.add(rank)
        return None

    def commit(self, job: QueuedJob, shape: Shape, slave: SlaveRuntime) -> Start:
        """Take the lowest free ids of an accepted model, update indexes and budgets."""
        cls = slave.cls
        assert cls is not None
        before = len(slave.free_gpus)
        if shape.gpus and shape.gpu_models and cls.match_mode(shape.gpu_models) != "all":
            gpu_ids = slave.matching_free(shape.gpu_models)[: shape.gpus]
            taken = set(gpu_ids)
            slave.free_gpus = [i for i in slave.free_gpus if i not in taken]
        else:
            gpu_ids = slave.free_gpus[: shape.gpus]
            slave.free_gpus = slave.free_gpus[shape.gpus :]
        cpu_ids = slave.free_cpus[: shape.cpus]
        slave.free_cpus = slave.free_cpus[shape.cpus :]
        slave.free_mem -= shape.memory_gb
        slave.ports.update(shape.host_ports)
        cls.move(slave, before)
        cls.touch()
        ignoring = frozenset(
            rr.id
            for rr in cls.reservations
            if res_rules.record_start(shape.rel(rr.id), rr, shape.gpus)
        )
        return Start(job.id, slave.name, tuple(gpu_ids), tuple(cpu_ids), ignoring)


# --- score plugins ----------------------------------------------------------------------------


def packing(shape: Shape, cls: SlaveClass, free: int, total: int) -> float:
    """Best fit: the fewer GPUs left free after the placement, the better.

    Filling partly used slaves first keeps whole slaves free for big jobs; CPU-only jobs thus go
    to slaves whose GPUs are all busy (or that have none) before fragmenting a free GPU slave.
    """
    if total <= 0:
        return 100.0
    return 100.0 * (1.0 - (free - shape.gpus) / total)


def private_preference(shape: Shape, cls: SlaveClass) -> float:
    """Owners use their own private cluster first; guests go there last (they may be halted)."""
    if not cls.private:
        return 50.0
    return 100.0 if cls.cluster_id in shape.owner_of else 0.0


def reservation_affinity(shape: Shape, cls: SlaveClass) -> float:
    """Entitled jobs use their open reservation first; guests avoid slaves they must leave."""
    score = 50.0
    for rr in cls.reservations:
        relation = shape.rel(rr.id)
        if relation == res_rules.GUEST:
            return 0.0
        if relation == res_rules.ENTITLED and rr.active:
            score = 100.0
    return score


# A plugin takes (shape, class, free GPUs of the slave, its GPUs).
Scorer = Callable[[Shape, SlaveClass, int, int], float]

# Plugins by name.
SCORERS: dict[str, Scorer] = {
    "packing": packing,
    "private_preference": lambda shape, cls, free, total: private_preference(shape, cls),
    "reservation_affinity": lambda shape, cls, free, total: reservation_affinity(shape, cls),
}


def check_weights(weights: Iterable[Sequence[object]]) -> None:
    """Raise ValueError for an unknown plugin name or a weight that is not a finite number."""
    for item in weights:
        name, weight = item
        if name not in SCORERS:
            known = ", ".join(sorted(SCORERS))
            raise ValueError(f"unknown scorer {name!r} (known: {known})")
        if isinstance(weight, bool) or not isinstance(weight, int | float) or weight != weight:
            raise ValueError(f"scorer {name!r}: weight must be a number")


class Scoring:
    """The configured plugins with their weights; ``total`` is the weighted sum."""

    def __init__(self, config: SchedulerConfig) -> None:
        check_weights(config.scorer_weights)
        self.plugins = tuple(
            (SCORERS[name], float(weight)) for name, weight in config.scorer_weights if weight
        )
        if self.plugins == _DEFAULT_PLUGINS:
            # The same sum, without the loop (placement is hot): an instance attribute over
            # the method, which mypy refuses to see assigned.
            self.total = _default_total  # type: ignore[method-assign]

    def total(self, shape: Shape, cls: SlaveClass, free: int, total: int) -> float:
        result = 0.0
        for plugin, weight in self.plugins:
            result += weight * plugin(shape, cls, free, total)
        return result


_DEFAULT_PLUGINS = tuple(
    (SCORERS[name], float(weight)) for name, weight in SchedulerConfig().scorer_weights
)


def _default_total(shape: Shape, cls: SlaveClass, free: int, total: int) -> float:
    # Exactly the loop's sum for the default weights (1, 2, 2), in the same order.
    return (
        packing(shape, cls, free, total)
        + 2.0 * private_preference(shape, cls)
        + 2.0 * reservation_affinity(shape, cls)
    )
