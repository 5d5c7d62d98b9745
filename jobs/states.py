"""Job states, the transitions between them, and the groups list filters use.

Defined once here; models, services, the scheduler bridge, the API and templates all read it.
"""

from django.db import models


class JobStatus(models.TextChoices):
    ONHOLD = "ONHOLD"
    QUEUED = "QUEUED"
    ASSIGNED = "ASSIGNED"
    STARTING = "STARTING"
    RUNNING = "RUNNING"
    CANCELLING = "CANCELLING"
    CANCELLED = "CANCELLED"
    FINISHED = "FINISHED"
    DELETED = "DELETED"
    FAILED = "FAILED"
    MUSTHALT = "MUSTHALT"
    HALTING = "HALTING"
    HALTED = "HALTED"


ALLOWED_TRANSITIONS: dict[str, frozenset[str]] = {
    JobStatus.ONHOLD: frozenset({JobStatus.QUEUED, JobStatus.CANCELLED}),
    # QUEUED -> FAILED: interactive job that could not start, notAfter passed, impossible request.
    JobStatus.QUEUED: frozenset(
        {JobStatus.ONHOLD, JobStatus.ASSIGNED, JobStatus.FAILED, JobStatus.CANCELLED}
    ),
    # ASSIGNED -> QUEUED: the slave vanished before the launch began; the job waits again.
    JobStatus.ASSIGNED: frozenset(
        {JobStatus.STARTING, JobStatus.QUEUED, JobStatus.FAILED, JobStatus.CANCELLING}
    ),
    JobStatus.STARTING: frozenset(
        {JobStatus.RUNNING, JobStatus.FINISHED, JobStatus.FAILED, JobStatus.CANCELLING}
    ),
    JobStatus.RUNNING: frozenset(
        {JobStatus.FINISHED, JobStatus.FAILED, JobStatus.CANCELLING, JobStatus.MUSTHALT}
    ),
    JobStatus.MUSTHALT: frozenset(
        {JobStatus.HALTING, JobStatus.FINISHED, JobStatus.FAILED, JobStatus.CANCELLING}
    ),
    # HALTING -> FINISHED: it exited 0 on its own while being halted (a halt-vs-finish race).
    JobStatus.HALTING: frozenset(
        {JobStatus.HALTED, JobStatus.FINISHED, JobStatus.FAILED, JobStatus.CANCELLING}
    ),
    # CANCELLING -> FINISHED: its container had exited 0 on its own before the cancel came (a
    # gang's task stopped by the policy an instant after it ended).
    JobStatus.CANCELLING: frozenset({JobStatus.CANCELLED, JobStatus.FAILED, JobStatus.FINISHED}),
    JobStatus.FINISHED: frozenset({JobStatus.DELETED}),
    JobStatus.FAILED: frozenset({JobStatus.DELETED}),
    JobStatus.CANCELLED: frozenset({JobStatus.DELETED}),
    JobStatus.HALTED: frozenset({JobStatus.DELETED}),
    JobStatus.DELETED: frozenset(),
}

EVERY_STATE = frozenset(s.value for s in JobStatus)
PENDING = frozenset({JobStatus.ONHOLD, JobStatus.QUEUED})
RUNNING = frozenset({JobStatus.STARTING, JobStatus.RUNNING, JobStatus.MUSTHALT, JobStatus.HALTING})
FINISHED = frozenset({JobStatus.FINISHED, JobStatus.FAILED, JobStatus.CANCELLED, JobStatus.HALTED})
DELETED = frozenset({JobStatus.DELETED})
# States in which the job holds a slave's GPUs, CPUs and memory.
HOLDS_RESOURCES = frozenset(
    {
        JobStatus.ASSIGNED,
        JobStatus.STARTING,
        JobStatus.RUNNING,
        JobStatus.MUSTHALT,
        JobStatus.HALTING,
        JobStatus.CANCELLING,
    }
)
# States in which a container may exist (the runtime and reconcile look at these).
ON_SLAVE = HOLDS_RESOURCES
ACTIVE = PENDING | HOLDS_RESOURCES
TERMINAL = FINISHED | DELETED

GROUPS: dict[str, frozenset[str]] = {
    "pending": PENDING,
    "running": RUNNING,
    "finished": FINISHED,
    "deleted": DELETED,
}

# Bootstrap badge colour per state, for templates.
BADGE = {
    JobStatus.ONHOLD: "secondary",
    JobStatus.QUEUED: "info",
    JobStatus.ASSIGNED: "primary",
    JobStatus.STARTING: "primary",
    JobStatus.RUNNING: "success",
    JobStatus.CANCELLING: "warning",
    JobStatus.CANCELLED: "dark",
    JobStatus.FINISHED: "success",
    JobStatus.DELETED: "light",
    JobStatus.FAILED: "danger",
    JobStatus.MUSTHALT: "warning",
    JobStatus.HALTING: "warning",
    JobStatus.HALTED: "secondary",
}


def is_allowed(current: str, target: str) -> bool:
    return target in ALLOWED_TRANSITIONS.get(current, frozenset())
