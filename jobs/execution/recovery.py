"""Recovery when a q cluster starts: whatever the previous one was doing when it was killed is
found and finished within seconds, not at the next periodic reconcile.

Every worker of a starting cluster sends django-q2's ``post_spawn``; the first one asks for one
``recover`` task (a compare-and-swap on the lease row, keyed by the cluster's sentinel process,
coalesces the others and a worker spawned again after a timeout). The task reconciles
every slave at once, re-driving work nobody claimed (a launch or stop fired on commit and lost)
and work claimed by a worker of this host that is gone (``jobs.execution.heartbeat.holder_dead``:
the killed cluster's), and asks for a tick (which takes over a tick lease such a worker held).
Only claims this host cannot judge (taken on another host) are waited for: once they must have
gone stale, it reconciles and asks for a tick again.
"""

import logging
import os
import time
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from core.tasks import fire
from jobs import task_names
from jobs.execution.heartbeat import holder_here, process_name
from jobs.execution.reconcile import reconcile_all
from jobs.models import Job, SchedulerLease
from jobs.states import ON_SLAVE
from jobs.wakeups import SCHEDULER_TICK_TASK

log = logging.getLogger(__name__)
RECOVER_TASK = task_names.RECOVER


def recovery_request(**_signal) -> bool:
    """Fire one recovery task per starting q cluster (called in each worker it spawns)."""
    try:
        return _request()
    except Exception:  # a worker that cannot spawn would be respawned forever
        log.exception("could not ask for the recovery pass")
        return False


def _request() -> bool:
    # Workers are children of the cluster's sentinel: it names this cluster, with its start
    # time (a cluster restarted in a container gets the same pids every time).
    cluster = process_name(os.getppid())[:100]
    SchedulerLease.objects.get_or_create(id=1)
    if (
        not SchedulerLease.objects.filter(pk=1)
        .exclude(recovery_by=cluster)
        .update(recovery_by=cluster)
    ):
        return False
    fire(RECOVER_TASK)
    return True


def _claims_stale_in() -> float:
    """Seconds until every claim taken before now (a worker's heartbeat, the tick lease) that
    this host cannot judge is stale: a claim by a worker of this host was re-driven at once if
    its worker is gone, and is left to it if not (should it die later, reconcile sees that)."""
    now = timezone.now()
    job_grace = timedelta(seconds=settings.PORTAL_RECOVERY_GRACE_S)
    claims = [
        (beat, job_grace)
        for beat, holder in Job.objects.filter(
            status__in=ON_SLAVE, runtime_heartbeat__gt=now - job_grace
        ).values_list("runtime_heartbeat", "runtime_holder")
        if beat is not None and not holder_here(holder)  # (set: filtered by it)
    ]
    claims += [
        (acquired, timedelta(seconds=settings.PORTAL_TICK_LEASE_S))
        for acquired, holder in SchedulerLease.objects.exclude(holder="").values_list(
            "acquired_at", "holder"
        )
        if acquired is not None and not holder_here(holder)
    ]
    return max(((last + grace - now).total_seconds() for last, grace in claims), default=0.0)


def recovery_run(*, wait: bool = True) -> None:

    # A tick of its own, not tick_request: the killed cluster may have left "a tick is pending".
    reconcile_all(unclaimed_ok=True)
    fire(SCHEDULER_TICK_TASK)
    pause = _claims_stale_in()
    if not wait or pause <= 0:
        return
    # Live workers keep renewing theirs, so this waits at most one grace period.
    limit = max(settings.PORTAL_RECOVERY_GRACE_S, settings.PORTAL_TICK_LEASE_S)
    time.sleep(min(pause, limit) + 0.5)
    reconcile_all(unclaimed_ok=True)
    fire(SCHEDULER_TICK_TASK)
