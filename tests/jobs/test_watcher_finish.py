"""In queue mode the watcher finishes an exited job itself, without a broker hop."""

import threading

import pytest
from django.conf import settings as django_settings

from jobs.execution.container_spec import LABEL_JOB
from jobs.execution.watcher import handle_event
from jobs.models import Job

pytestmark = pytest.mark.django_db


def die_event(job):
    return {"action": "die", "labels": {LABEL_JOB: str(job.uuid)}}


@pytest.fixture(autouse=True)
def _keep_test_connection(monkeypatch):
    # The watcher drops stale connections; inside a test's transaction that would close it.
    monkeypatch.setattr("jobs.execution.watcher.close_old_connections", lambda: None)


@pytest.fixture
def running_job(submit, slave):
    job = submit()
    Job.objects.filter(pk=job.pk).update(status="RUNNING", slave=slave, container_id="c1")
    return job


def test_queue_mode_finishes_in_this_process(settings, monkeypatch, running_job):
    settings.PORTAL_TASK_MODE = "queue"
    enqueued, finished, done = [], [], threading.Event()
    monkeypatch.setattr("django_q.tasks.async_task", lambda *a, **kw: enqueued.append(a))

    def finish(*, job_id):
        finished.append((job_id, django_settings.PORTAL_TASK_MODE))
        done.set()

    monkeypatch.setattr("jobs.execution.runs.job_finish_run", finish)
    handle_event(die_event(running_job))
    assert done.wait(5)
    assert finished == [(running_job.pk, "queue")]
    assert enqueued == []


def test_other_modes_fire_the_finish_task(
    recorded_tasks, running_job, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        handle_event(die_event(running_job))
        handle_event({"action": "start", "labels": {LABEL_JOB: str(running_job.uuid)}})
    assert recorded_tasks == [("jobs.tasks.job_finish", (running_job.pk,))]
