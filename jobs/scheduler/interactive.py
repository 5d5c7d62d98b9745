"""Interactive jobs: start now, or make room by halting and start when the halted jobs end.

GPULab's interactive jobs start at once or fail. Failing while running jobs could be halted to
make room would make them useless on a busy cluster, so (GPULab "favours" them):

* they are tried before every batch job of the cycle (``ordering.py``);
* one that finds no room may halt running jobs past their minDuration on one slave: the smallest
  set the planner finds (``halts.py``: jobs already leaving first, then restartable ones, heavy
  users, the most recently started), never owners' jobs on a private cluster it does not own nor
  jobs entitled to an open reservation it is not entitled to (``fairness.protected``), and at
  most ``max_interactive_halts_per_cycle`` per cycle. The halts are recorded with GPULab's
  reason "Score" (GPULab has no reason of its own for this);
* it then stays queued, explained, holding the room they free, and starts in the first cycle
  after they ended -- but at most ``interactive_halt_wait_s`` (halt grace period plus a margin)
  after the first halt made for it (``QueuedJob.halt_wait_since``), or after its submission
  when none was made for it (it waits behind jobs that were already leaving, or its first cycle
  came that late). Past that it fails;
* when no set of haltable jobs makes room, it fails at once, as before.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from .fairness import protected
from .halts import HaltPlanner, RoomPlan
from .model import QueuedJob, RunningJob, format_utc
from .placement import FailureMemo, Placer
from .shape import Shape
from .state import Context, SlaveClass
from .timing import format_duration

FAIL_PREFIX = "interactive job could not start at once: "


class InteractiveRoom:
    """Room behind halted jobs for the interactive jobs of one cycle."""

    def __init__(self, ctx: Context, planner: HaltPlanner, placer: Placer) -> None:
        self.ctx = ctx
        self.planner = planner
        self.placer = placer
        self.halts = 0  # new halts made for interactive jobs in this cycle
        # Shapes with no room even behind every haltable job: later interactive jobs of the
        # shape find fewer jobs left to halt and a smaller budget, so they cannot do better.
        self.failed = FailureMemo()
        self.limit = timedelta(seconds=ctx.config.interactive_halt_wait_s)

    def find(self, job: QueuedJob, shape: Shape) -> RoomPlan | str | None:
        """A plan to hold room with, a reason to fail now, or None (no room: fail as before)."""
        ctx = self.ctx
        if not ctx.config.interactive_halts:
            return None
        since = job.halt_wait_since
        if ctx.now - (since or job.submitted_at) > self.limit:
            if since is None:
                return None  # too late to start waiting: fails with the usual reasons
            return (
                f"{FAIL_PREFIX}the jobs halted for it did not free room within "
                f"{format_duration(self.limit.total_seconds())}"
            )
        if self.failed.known(shape):
            return None

        def eligible(victim: RunningJob, cls: SlaveClass) -> bool:
            return not protected(victim, cls, shape, ctx)

        budget = ctx.config.max_interactive_halts_per_cycle - self.halts
        plan = self.planner.plan(shape, self.placer.open_classes(shape), eligible, budget)
        if plan is None:
            self.failed.add(shape)
            return None
        self.halts += len(plan.new_halts)
        return plan

    def deadline(self, job: QueuedJob, plan: RoomPlan) -> datetime:
        """When the job fails if it has not started by then."""
        if job.halt_wait_since is not None:
            return job.halt_wait_since + self.limit
        # Halts made now start the clock now (they become its halt_wait_since).
        return (self.ctx.now if plan.new_halts else job.submitted_at) + self.limit

    def explanation(self, job: QueuedJob, plan: RoomPlan) -> str:
        return (
            "interactive job: starts when they end, fails if not started by "
            f"{format_utc(self.deadline(job, plan))}"
        )
