"""Score plugins: rank the slaves that passed every filter, each plugin 0-100.

Which plugins run and their weights are data: ``SchedulerConfig.scorer_weights``, a tuple of
(name, weight) in the order they are added up (``PORTAL_SCHEDULER_SCORER_WEIGHTS`` through the
bridge). The total is the weighted sum; ties go to the slave whose name sorts first, so a cycle
is deterministic. Every plugin except packing gives all members of a slave class the same score,
so the placement search only needs the best-packed member of each class.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from . import reservations as res_rules
from .model import SchedulerConfig
from .shape import Shape
from .state import SlaveClass


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
