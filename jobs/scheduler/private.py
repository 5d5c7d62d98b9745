"""Private clusters: the owners' projects have absolute priority.

* Jobs of other projects run there only as guests: no clusterId in their request and a
  minDuration of at most ``private_guest_max_min_duration_s`` (see ``PrivateAccessFilter``).
* While an owner job waits for room on its cluster, no guest is started there
  (``OwnerDemandFilter``): the demand counted here drops as owner jobs are served.
* An owner job that finds no room anywhere halts guests past their minDuration on one slave of
  its cluster ("Private Cluster Priority"); the freed room is held for it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from .model import QueuedJob, RunningJob, SlaveState
from .shape import Shape
from .state import Context, SlaveClass


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
