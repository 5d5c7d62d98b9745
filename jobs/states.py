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


S = JobStatus

ALLOWED_TRANSITIONS: dict[str, frozenset[str]] = {
    S.ONHOLD: frozenset({S.QUEUED, S.CANCELLED}),
    # QUEUED -> FAILED: interactive job that could not start, notAfter passed, impossible request.
    S.QUEUED: frozenset({S.ONHOLD, S.ASSIGNED, S.FAILED, S.CANCELLED}),
    # ASSIGNED -> QUEUED: the slave vanished before the launch began; the job waits again.
    S.ASSIGNED: frozenset({S.STARTING, S.QUEUED, S.FAILED, S.CANCELLING}),
    S.STARTING: frozenset({S.RUNNING, S.FINISHED, S.FAILED, S.CANCELLING}),
    S.RUNNING: frozenset({S.FINISHED, S.FAILED, S.CANCELLING, S.MUSTHALT}),
    S.MUSTHALT: frozenset({S.HALTING, S.FINISHED, S.FAILED, S.CANCELLING}),
    # HALTING -> FINISHED: it exited 0 on its own while being halted (a halt-vs-finish race).
    S.HALTING: frozenset({S.HALTED, S.FINISHED, S.FAILED, S.CANCELLING}),
    S.CANCELLING: frozenset({S.CANCELLED, S.FAILED}),
    S.FINISHED: frozenset({S.DELETED}),
    S.FAILED: frozenset({S.DELETED}),
    S.CANCELLED: frozenset({S.DELETED}),
    S.HALTED: frozenset({S.DELETED}),
    S.DELETED: frozenset(),
}

EVERY_STATE = frozenset(s.value for s in S)
PENDING = frozenset({S.ONHOLD, S.QUEUED})
RUNNING = frozenset({S.STARTING, S.RUNNING, S.MUSTHALT, S.HALTING})
FINISHED = frozenset({S.FINISHED, S.FAILED, S.CANCELLED, S.HALTED})
DELETED = frozenset({S.DELETED})
# States in which the job holds a slave's GPUs, CPUs and memory.
HOLDS_RESOURCES = frozenset(
    {S.ASSIGNED, S.STARTING, S.RUNNING, S.MUSTHALT, S.HALTING, S.CANCELLING}
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
    S.ONHOLD: "secondary",
    S.QUEUED: "info",
    S.ASSIGNED: "primary",
    S.STARTING: "primary",
    S.RUNNING: "success",
    S.CANCELLING: "warning",
    S.CANCELLED: "dark",
    S.FINISHED: "success",
    S.DELETED: "light",
    S.FAILED: "danger",
    S.MUSTHALT: "warning",
    S.HALTING: "warning",
    S.HALTED: "secondary",
}


def is_allowed(current: str, target: str) -> bool:
    return target in ALLOWED_TRANSITIONS.get(current, frozenset())
