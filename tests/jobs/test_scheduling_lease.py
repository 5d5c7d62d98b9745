"""The tick lease: one holder at a time, exactly one follow-up for requests during a tick."""

from datetime import timedelta

import pytest
from django.utils import timezone

from jobs.models import SchedulerLease
from jobs.scheduler_bridge.tick import lease_acquire_or_request_rerun, lease_release_or_continue

pytestmark = pytest.mark.django_db


def test_first_caller_takes_the_lease():
    assert lease_acquire_or_request_rerun(holder="a") is True
    assert SchedulerLease.objects.get().holder == "a"


def test_second_caller_asks_for_a_rerun_instead_of_running():
    assert lease_acquire_or_request_rerun(holder="a")
    assert lease_acquire_or_request_rerun(holder="b") is False
    assert lease_acquire_or_request_rerun(holder="c") is False
    # Two requests during the tick: exactly one follow-up, then the lease is free.
    assert lease_release_or_continue(holder="a") is True
    assert lease_release_or_continue(holder="a") is False
    assert SchedulerLease.objects.get().holder == ""


def test_release_without_requests_frees_the_lease():
    assert lease_acquire_or_request_rerun(holder="a")
    assert lease_release_or_continue(holder="a", seconds=0.5) is False
    row = SchedulerLease.objects.get()
    assert row.holder == "" and row.last_tick_seconds == 0.5
    assert lease_acquire_or_request_rerun(holder="b") is True


def test_stale_lease_of_a_crashed_worker_is_taken_over(settings):
    settings.PORTAL_TICK_LEASE_S = 60
    long_ago = timezone.now() - timedelta(minutes=5)
    assert lease_acquire_or_request_rerun(holder="crashed", now=long_ago)
    assert lease_acquire_or_request_rerun(holder="b") is True
    # The crashed worker, should it wake up, neither releases nor reruns the new holder's lease.
    assert lease_release_or_continue(holder="crashed") is False
    assert SchedulerLease.objects.get().holder == "b"


@pytest.mark.django_db(transaction=True)
def test_a_long_tick_keeps_its_lease_and_a_killed_holder_is_noticed_in_seconds(
    settings, monkeypatch
):
    """The holder renews the lease while it ticks (a thread beats every fifth of the lease), so
    a short lease tells a killed holder from a slow one."""
    import importlib
    import time

    from jobs.scheduler_bridge.tick import tick

    settings.PORTAL_TICK_LEASE_S = 1
    seen = []

    def slow_tick(now=None):
        if not seen:
            first = SchedulerLease.objects.get().acquired_at
            time.sleep(1.6)  # longer than the lease: only the heartbeat keeps it
            seen.append(lease_acquire_or_request_rerun(holder="other"))
            seen.append(SchedulerLease.objects.get().acquired_at > first)
        return {"next_wakeup": None}

    monkeypatch.setattr(
        importlib.import_module("jobs.scheduler_bridge.tick"), "tick_once", slow_tick
    )
    tick()
    assert seen == [False, True]
    # A holder that stops beating (killed) loses the lease once it is PORTAL_TICK_LEASE_S old.
    assert lease_acquire_or_request_rerun(holder="killed")
    time.sleep(1.1)
    assert lease_acquire_or_request_rerun(holder="next") is True


def test_default_lease_notices_a_dead_holder_in_seconds(settings):
    assert settings.PORTAL_TICK_LEASE_S <= 15
