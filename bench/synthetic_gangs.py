"""Gangs mixed into a synthetic snapshot, for ``bench/scheduler.py --gangs N``.

``with_gangs(snapshot, gangs=N, seed=...)`` answers two snapshots of the same queued jobs:
one where N runs of consecutive queued jobs (2-16 each) are the tasks of N gangs, and one
where the very same jobs are ordinary jobs. Both get the same normalisation (a gang's tasks
share the first task's user, project and submit time, and are not interactive), so the
only difference the benchmark measures is gang placement itself.
"""

from __future__ import annotations

import random
from dataclasses import replace

from jobs.scheduler.model import Snapshot


def with_gangs(snapshot: Snapshot, *, gangs: int, seed: int = 0) -> tuple[Snapshot, Snapshot]:
    """(snapshot with gangs, the same jobs without gangs)."""
    rng = random.Random(seed)
    queued = list(snapshot.queued)
    sizes = []
    left = len(queued)
    for _ in range(gangs):
        size = rng.randint(2, 16)
        if size > left:
            break
        sizes.append(size)
        left -= size
    # Spread the gangs over the queue: a gap of plain jobs before each.
    gaps = left // (len(sizes) + 1) if sizes else 0
    ganged, plain = [], []
    position = 0
    for number, size in enumerate(sizes):
        for job in queued[position : position + gaps]:
            ganged.append(job)
            plain.append(job)
        position += gaps
        leader = queued[position]
        for job in queued[position : position + size]:
            common = replace(
                job,
                user=leader.user,
                project=leader.project,
                submitted_at=leader.submitted_at,
                interactive=False,
                halt_wait_since=None,
            )
            ganged.append(replace(common, gang=f"gang{number}", gang_size=size))
            plain.append(common)
        position += size
    ganged.extend(queued[position:])
    plain.extend(queued[position:])
    return replace(snapshot, queued=tuple(ganged)), replace(snapshot, queued=tuple(plain))


__all__ = ["with_gangs"]
