"""The only bridge between the database and the pure scheduler in ``jobs/scheduler/``.

``build_snapshot(now)`` reads everything one cycle needs with a fixed number of queries (not one
per job or slave); ``apply(result, now)`` writes decisions through the services, with
compare-and-swap transitions; ``tick()`` wraps both in the lease so that at most one tick runs at a
time and events during a tick cause exactly one follow-up.
"""

from jobs.scheduler_bridge.apply import apply, apply_explanations, apply_starts
from jobs.scheduler_bridge.snapshot import (
    build_snapshot,
    scheduler_config,
    slave_state,
)
from jobs.scheduler_bridge.tick import tick, tick_once

__all__ = [
    "apply",
    "apply_explanations",
    "apply_starts",
    "build_snapshot",
    "scheduler_config",
    "slave_state",
    "tick",
    "tick_once",
]
