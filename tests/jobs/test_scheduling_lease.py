"""The tick lease: one holder at a time, exactly one follow-up for requests during a tick."""

from datetime import timedelta

import pytest
from django.utils import timezone

from jobs.models import SchedulerLease
from jobs.scheduling.lease import lease_acquire_or_request_rerun, lease_release_or_continue

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
