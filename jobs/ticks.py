"""Asking for a scheduler tick. Every event that can change a decision calls ``tick_request``."""

from portal.tasks import fire

SCHEDULER_TICK_TASK = "jobs.tasks.scheduler_tick"


def tick_request() -> None:
    """Ask for a scheduler tick once the current transaction commits.

    Many requests in a burst coalesce: the tick itself holds a lease and, when asked again
    while it runs, runs exactly one follow-up (see jobs.scheduling.lease).
    """
    fire(SCHEDULER_TICK_TASK)
