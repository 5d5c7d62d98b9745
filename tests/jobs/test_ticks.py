"""In queue mode a burst of tick requests enqueues one tick task, not one per request."""

import pytest
from django.db import transaction

from jobs.ticks import tick_request, tick_started

pytestmark = pytest.mark.django_db


@pytest.fixture
def enqueued(settings, monkeypatch):
    settings.PORTAL_TASK_MODE = "queue"
    calls = []
    monkeypatch.setattr("django_q.tasks.async_task", lambda *args, **kw: calls.append(args))
    return calls


def burst(count, capture):
    for _ in range(count):
        with capture(execute=True), transaction.atomic():
            tick_request()


def test_burst_enqueues_one_tick_until_it_starts(enqueued, django_capture_on_commit_callbacks):
    burst(5, django_capture_on_commit_callbacks)
    assert enqueued == [("jobs.tasks.scheduler_tick",)]
    tick_started()  # the waiting tick began: later requests need a tick of their own
    burst(3, django_capture_on_commit_callbacks)
    assert len(enqueued) == 2


def test_nothing_is_enqueued_before_commit(enqueued, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        with transaction.atomic():
            tick_request()
        assert enqueued == []
    assert len(callbacks) == 1
