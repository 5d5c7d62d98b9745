"""The queue path on both of django-q2's brokers (the ORM broker and Redis).

A submission enqueues a scheduler tick after commit; a worker taking that task from the broker
assigns the job and enqueues its launch. Nothing reaches the broker before commit or after a
rollback.
"""

import pytest
from django.db import transaction

from core.tasks import fire
from jobs.models import Job
from jobs.states import JobStatus
from tests.support.brokers import BROKERS, use_broker

pytestmark = pytest.mark.django_db


@pytest.fixture(params=BROKERS)
def queue(request, settings, monkeypatch):
    probe = use_broker(request.param, monkeypatch, settings)
    yield probe
    probe.clear()


def test_fire_reaches_the_broker_only_on_commit(queue, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        with transaction.atomic():
            fire("jobs.tasks.job_finish", 41)
            assert queue.calls() == []
    assert queue.calls() == [("jobs.tasks.job_finish", 41)]


def test_a_rollback_enqueues_nothing(queue, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        with pytest.raises(RuntimeError), transaction.atomic():
            fire("jobs.tasks.job_finish", 42)
            raise RuntimeError("rolled back")
    assert queue.calls() == []


def test_submit_tick_assign_launch_through_the_broker(
    queue, submit, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        job = submit()
    assert queue.calls() == [("jobs.tasks.scheduler_tick",)]

    with django_capture_on_commit_callbacks(execute=True):
        ran = queue.run_next()
    assert ran == ("jobs.tasks.scheduler_tick",)
    job.refresh_from_db()
    assert job.status == JobStatus.ASSIGNED
    assert len(job.gpu_ids) == 1
    assert queue.calls() == [("jobs.tasks.job_launch", job.pk)]
    assert Job.objects.filter(status=JobStatus.ASSIGNED).count() == 1
