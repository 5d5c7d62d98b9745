"""At most one scheduler tick at a time, and exactly one follow-up for events during a tick.

A single ``SchedulerLease`` row is taken with compare-and-swap (works the same on SQLite and
PostgreSQL). A tick that finds the lease taken sets ``rerun_requested`` instead of running; the
holder sees the flag when it would release, and runs once more. The holder renews the lease
every fifth of ``PORTAL_TICK_LEASE_S`` while it ticks (``lease_heartbeat``); a lease not renewed
for ``PORTAL_TICK_LEASE_S`` belongs to a killed worker and may be taken over. The holder's name
starts with its process (``lease_holder``), so a lease whose holder ran on this host and is gone
is taken over at once (``jobs.execution.heartbeat.holder_dead``).
"""

import uuid
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from jobs.execution.heartbeat import Heartbeat, holder_dead, holder_name
from jobs.models import SchedulerLease


def _row() -> None:
    SchedulerLease.objects.get_or_create(id=1)


def lease_holder() -> str:
    """A name for one tick run: this process (``node:pid:start``) and a tail of its own."""
    return f"{holder_name()}:{uuid.uuid4().hex[:12]}"


def _take_from_dead_holder(*, holder: str, now: datetime) -> bool:
    """Take the lease when its holder ran on this host and its process is gone: matched by the
    dead holder's name, so a lease taken since by anyone else is left alone."""
    current = SchedulerLease.objects.filter(pk=1).values_list("holder", flat=True).first()
    if not current or not holder_dead(current):
        return False
    return (
        SchedulerLease.objects.filter(pk=1, holder=current).update(
            holder=holder, acquired_at=now, rerun_requested=False
        )
        == 1
    )


def lease_acquire_or_request_rerun(*, holder: str, now: datetime | None = None) -> bool:
    """True: the caller holds the lease and must tick. False: the holder will tick again."""
    _row()
    while True:
        now = now or timezone.now()
        stale = now - timedelta(seconds=settings.PORTAL_TICK_LEASE_S)
        free_or_stale = Q(holder="") | Q(acquired_at__lt=stale)
        taken = (
            SchedulerLease.objects.filter(free_or_stale, pk=1).update(
                holder=holder, acquired_at=now, rerun_requested=False
            )
            == 1
        )
        if taken or _take_from_dead_holder(holder=holder, now=now):
            return True
        asked = (
            SchedulerLease.objects.filter(pk=1).exclude(holder="").update(rerun_requested=True) == 1
        )
        if asked:
            return False
        now = None  # the lease was released between our two updates: try to take it again


def lease_release_or_continue(*, holder: str, seconds: float | None = None) -> bool:
    """Release the lease; True when a rerun was requested meanwhile (caller ticks again)."""
    now = timezone.now()
    released = SchedulerLease.objects.filter(pk=1, holder=holder, rerun_requested=False).update(
        holder="", acquired_at=None, last_tick_at=now, last_tick_seconds=seconds
    )
    if released == 1:
        return False
    renewed = SchedulerLease.objects.filter(pk=1, holder=holder).update(
        rerun_requested=False, acquired_at=now, last_tick_at=now, last_tick_seconds=seconds
    )
    # renewed == 0: our lease was taken over as stale; the new holder runs, not us.
    return renewed == 1


def lease_renew(*, holder: str) -> bool:
    """The holder's heartbeat: still alive. False when the lease was taken over meanwhile."""
    return (
        SchedulerLease.objects.filter(pk=1, holder=holder).update(acquired_at=timezone.now()) == 1
    )


def lease_heartbeat(*, holder: str):
    """``with lease_heartbeat(holder=...):`` renews the lease in a thread while a tick runs."""
    return Heartbeat(lambda: lease_renew(holder=holder), settings.PORTAL_TICK_LEASE_S / 5)
