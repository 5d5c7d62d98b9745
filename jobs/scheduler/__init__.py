"""The pure GPU scheduler: a frozen :class:`Snapshot` in, a :class:`CycleResult` out.

Stdlib only: no Django, no other app. ``jobs/scheduler_bridge/`` is the only bridge to the database.
"""

from .core import run_cycle
from .explain import impossible_reason
from .model import (
    Cancel,
    CycleResult,
    Decision,
    Fail,
    GpuInfo,
    Halt,
    HaltInfo,
    HaltReason,
    QueuedJob,
    ReservationWindow,
    RunningJob,
    RuntimeHistory,
    SchedulerConfig,
    SlaveState,
    Snapshot,
    Start,
    format_utc,
)
from .usage import accrue, decayed, usage_rate

__all__ = [
    "Cancel",
    "CycleResult",
    "Decision",
    "Fail",
    "GpuInfo",
    "Halt",
    "HaltInfo",
    "HaltReason",
    "QueuedJob",
    "ReservationWindow",
    "RunningJob",
    "RuntimeHistory",
    "SchedulerConfig",
    "SlaveState",
    "Snapshot",
    "Start",
    "accrue",
    "decayed",
    "format_utc",
    "impossible_reason",
    "run_cycle",
    "usage_rate",
]
