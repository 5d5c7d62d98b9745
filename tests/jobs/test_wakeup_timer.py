"""Time-driven ticks: every tick stores the next wakeup; the watcher's timer ticks then."""

import copy
import threading
import time
from datetime import timedelta

import pytest
from django.utils import timezone

from jobs.models import Job, SchedulerLease
from jobs.scheduler_bridge.tick import tick
from jobs.wakeups import wakeup_fire_if_due, wakeup_loop, wakeup_store


def not_before_doc(hello_world, moment):
    doc = copy.deepcopy(hello_world)
    doc["request"]["scheduling"]["notBefore"] = moment.strftime("%Y-%m-%dT%H:%M:%SZ")
    return doc


def stored_wakeup():
    return SchedulerLease.objects.get(pk=1).next_wakeup


@pytest.mark.django_db
def test_tick_stores_the_next_not_before(submit, hello_world):
    moment = (timezone.now() + timedelta(hours=1)).replace(microsecond=0)
    job = submit(not_before_doc(hello_world, moment))
    tick()
    job.refresh_from_db()
    assert job.status == "QUEUED"
    assert stored_wakeup() == moment
    # Once the job started nothing is time-driven any more but its maxDuration deadline.
    tick(now=moment + timedelta(seconds=1))
    job.refresh_from_db()
    assert job.status == "ASSIGNED"
    assert stored_wakeup() == moment + timedelta(seconds=1 + job.max_duration_s)


@pytest.mark.django_db
def test_due_wakeup_asks_for_one_tick(recorded_tasks, django_capture_on_commit_callbacks):
    now = timezone.now()
    wakeup_store(now + timedelta(seconds=30))
    assert wakeup_fire_if_due(now) == pytest.approx(30)
    assert recorded_tasks == []
    with django_capture_on_commit_callbacks(execute=True):
        assert wakeup_fire_if_due(now + timedelta(seconds=31)) == 0.0
    assert recorded_tasks == [("jobs.tasks.scheduler_tick", ())]
    assert stored_wakeup() is None  # cleared: a second timer does not ask again
    with django_capture_on_commit_callbacks(execute=True):
        wakeup_fire_if_due(now + timedelta(seconds=32))
    assert len(recorded_tasks) == 1


@pytest.mark.django_db(transaction=True)
def test_not_before_job_is_assigned_within_two_seconds(submit, hello_world, monkeypatch):
    """End to end in one process: the real timer thread, the real tick, the test database."""
    monkeypatch.setattr("jobs.wakeups.tick_request", lambda: tick())
    moment = (timezone.now() + timedelta(seconds=3)).replace(microsecond=0)
    job = submit(not_before_doc(hello_world, moment))
    tick()  # what the submit's tick request does: stores the wakeup
    assert stored_wakeup() == moment
    stop = threading.Event()
    timer = threading.Thread(target=wakeup_loop, args=(stop,), daemon=True)
    timer.start()
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            job.refresh_from_db()
            if job.status != "QUEUED":
                break
            time.sleep(0.05)
    finally:
        stop.set()
        timer.join(5)
    assert job.status == "ASSIGNED"
    assigned = Job.objects.get(pk=job.pk).status_updated
    late = (assigned - moment).total_seconds()
    assert 0 <= late <= 2.0, late
