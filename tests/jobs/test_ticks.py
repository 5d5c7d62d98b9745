"""In queue mode a burst of tick requests enqueues one tick task, not one per request.

Run on both of django-q2's brokers (the ORM broker and Redis): the "a tick is pending" flag is
a database row, not a look at the broker's queue.
"""

import pytest
from django.db import transaction

from jobs.models import SchedulerLease
from jobs.wakeups import tick_request, tick_started
from tests.support.brokers import BROKERS, use_broker

pytestmark = pytest.mark.django_db


@pytest.fixture(params=BROKERS)
def queue(request, settings, monkeypatch):
    probe = use_broker(request.param, monkeypatch, settings)
    yield probe
    probe.clear()


def burst(count, capture):
    for _ in range(count):
        with capture(execute=True), transaction.atomic():
            tick_request()


def test_burst_enqueues_one_tick_until_it_starts(queue, django_capture_on_commit_callbacks):
    burst(5, django_capture_on_commit_callbacks)
    assert queue.calls() == [("jobs.tasks.scheduler_tick",)]
    tick_started()  # the waiting tick began: later requests need a tick of their own
    burst(3, django_capture_on_commit_callbacks)
    assert queue.calls() == [("jobs.tasks.scheduler_tick",)] * 2


def test_nothing_is_enqueued_before_commit(queue, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        with transaction.atomic():
            tick_request()
        assert queue.calls() == []
    assert len(callbacks) == 1


def test_a_refused_enqueue_leaves_no_pending_flag(
    queue, monkeypatch, django_capture_on_commit_callbacks
):
    """A broker that is down must not leave "a tick is queued" set: the next request retries."""

    def down(*args, **kwargs):
        raise ConnectionError("broker down")

    with monkeypatch.context() as patch:
        patch.setattr("django_q.tasks.async_task", down)
        with pytest.raises(ConnectionError):
            burst(1, django_capture_on_commit_callbacks)
    assert SchedulerLease.objects.get(pk=1).tick_pending is False
    burst(1, django_capture_on_commit_callbacks)
    assert queue.calls() == [("jobs.tasks.scheduler_tick",)]
