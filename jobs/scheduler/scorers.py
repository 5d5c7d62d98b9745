"""Score plugins: rank the slaves that passed every filter, each plugin 0-100.

The total is the weighted sum; ties go to the slave whose name sorts first, so a cycle is
deterministic. Every plugin except packing gives all members of a slave class the same score, so
the placement search only needs the best-packed member of each class.
"""

from __future__ import annotations

from . import reservations as res_rules
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


def total_score(shape: Shape, cls: SlaveClass, free: int, total: int) -> float:
    """Weighted sum of all score plugins for one candidate slave."""
    return (
        packing(shape, cls, free, total)
        + 2.0 * private_preference(shape, cls)
        + 2.0 * reservation_affinity(shape, cls)
    )
