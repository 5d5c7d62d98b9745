"""The notifications app answers jobs' signals (notifications/receivers.py): the retry timer
runs in the watcher process from its start to its stop; a status jobs announces fires the
e-mail task (tests/notifications/test_job_emails.py) and the deliveries (test_subscriptions.py)."""

import threading
import time

import pytest

from jobs.models import Job
from jobs.signals import job_restarted, job_status_changed, watcher_started
from notifications import receivers, subscriptions
from notifications.task_names import JOB_NOTIFY as NOTIFY


def _thread(name: str) -> threading.Thread | None:
    return next((t for t in threading.enumerate() if t.name == name), None)


def test_the_retry_timer_runs_from_the_watchers_start_to_its_stop(monkeypatch):
    passes = []
    monkeypatch.setattr(subscriptions, "deliveries_retry_due", lambda: passes.append(1))
    monkeypatch.setattr(subscriptions, "RETRY_POLL_S", 0.01)
    assert _thread("deliveries") is None
    stop = threading.Event()
    watcher_started.send("watcher", stop=stop)
    timer = _thread("deliveries")
    assert timer is not None and timer.daemon
    deadline = time.monotonic() + 5
    while len(passes) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(passes) >= 3  # it looks again and again
    stop.set()
    timer.join(timeout=5)
    assert not timer.is_alive()


@pytest.mark.django_db
def test_a_status_fires_one_e_mail_task_however_often_ready_runs(
    submit, hello_world, recorded_tasks, django_capture_on_commit_callbacks
):
    hello_world["request"]["extra"] = {"emailOnRun": ["run@example.org"]}
    job = submit(hello_world)
    receivers.receivers_connect()  # again, as a second ready() would: dispatch_uid keeps one
    with django_capture_on_commit_callbacks(execute=True):
        job_status_changed.send(Job, job=job, status="RUNNING")
        job_restarted.send(Job, job=job, follow=job)
    assert [args for path, args in recorded_tasks if path == NOTIFY] == [(job.pk, "RUNNING")]
