"""jobs tells the apps above it what happened (jobs/signals.py) without importing them: each
status change once, after its transaction commits, never for a change rolled back or lost; a
restart; the watcher's start. The notifications app's answers are tested in tests/notifications/."""

import threading

import pytest
from django.db import transaction
from django.utils import timezone

from jobs.execution.runs import job_restart_create
from jobs.models import Job
from jobs.scheduler import model as sm
from jobs.scheduler_bridge.apply import apply_fails_and_cancels
from jobs.signals import (
    job_restarted,
    job_status_changed,
    signal_send_after_commit,
    watcher_started,
)
from jobs.transitions import job_transition

pytestmark = pytest.mark.django_db


@pytest.fixture
def heard():
    """Every job_status_changed and job_restarted, as (what, job pk, status or follow pk)."""
    seen = []

    def status(sender, *, job, status, **kwargs):
        assert sender is Job
        seen.append(("status", job.pk, status))

    def restart(sender, *, job, follow, **kwargs):
        seen.append(("restart", job.pk, follow.pk))

    job_status_changed.connect(status, dispatch_uid="test-heard-status")
    job_restarted.connect(restart, dispatch_uid="test-heard-restart")
    yield seen
    job_status_changed.disconnect(dispatch_uid="test-heard-status")
    job_restarted.disconnect(dispatch_uid="test-heard-restart")


def test_a_transition_is_told_once_after_its_commit(
    submit, heard, django_capture_on_commit_callbacks
):
    job = submit()
    heard.clear()
    with django_capture_on_commit_callbacks(execute=False) as pending:
        assert job_transition(job=job, to="ASSIGNED")
        assert heard == []  # not before the commit
    for callback in pending:
        callback()
    assert heard == [("status", job.pk, "ASSIGNED")]


def test_a_rolled_back_or_lost_change_is_never_told(
    submit, heard, django_capture_on_commit_callbacks
):
    job = submit()
    heard.clear()
    with django_capture_on_commit_callbacks(execute=True):
        with pytest.raises(RuntimeError), transaction.atomic():
            job_transition(job=job, to="ASSIGNED")
            raise RuntimeError("rolled back")
    assert heard == []
    job.refresh_from_db()  # QUEUED again
    stale = Job.objects.get(pk=job.pk)
    with django_capture_on_commit_callbacks(execute=True):
        assert job_transition(job=job, to="CANCELLED")
        assert not job_transition(job=stale, to="ASSIGNED")  # another writer won
    assert heard == [("status", job.pk, "CANCELLED")]


def test_submit_tells_each_queued_job_and_not_a_held_one(
    member, project, slave, submit, heard, hello_world, django_capture_on_commit_callbacks
):
    from jobs.user_actions.services import job_submit_many

    with django_capture_on_commit_callbacks(execute=True):
        jobs = job_submit_many(user=member, project=project, documents=[hello_world, hello_world])
    assert heard == [("status", j.pk, "QUEUED") for j in jobs]
    heard.clear()
    with django_capture_on_commit_callbacks(execute=True):
        submit(hold=True)
    assert heard == []


def test_the_scheduler_tells_the_jobs_it_fails(submit, heard, django_capture_on_commit_callbacks):
    job = submit()
    heard.clear()
    result = sm.CycleResult(decisions=(sm.Fail(str(job.uuid), "cannot start"),), explanations={})
    with django_capture_on_commit_callbacks(execute=True):
        apply_fails_and_cancels(result, {str(job.uuid): job}, timezone.now())
    assert Job.objects.get(pk=job.pk).status == "FAILED"
    assert heard == [("status", job.pk, "FAILED")]


def test_a_restart_is_told_with_its_continuation(
    submit, heard, hello_world, django_capture_on_commit_callbacks
):
    hello_world["request"]["scheduling"]["restartable"] = True
    job = submit(hello_world)
    now = timezone.now()
    Job.objects.filter(pk=job.pk).update(
        status="HALTED", started_at=now - timezone.timedelta(hours=1), ended_at=now
    )
    job.refresh_from_db()
    heard.clear()
    with django_capture_on_commit_callbacks(execute=True):
        follow = job_restart_create(job=job)
    assert heard == [("restart", job.pk, follow.pk)]


def test_nothing_is_registered_on_commit_without_a_listener(django_capture_on_commit_callbacks):
    from django.dispatch import Signal

    lonely = Signal()
    with django_capture_on_commit_callbacks() as pending:
        signal_send_after_commit(lonely, sender=Job, calls=[{"job": None}])
    assert pending == []


def test_the_watcher_tells_its_start_with_its_stop_event(monkeypatch):
    from jobs.execution import watcher

    for loop in ("wakeup_loop", "metrics_sampler_loop"):
        monkeypatch.setattr(watcher, loop, lambda stop: None)
    started = []

    def on_start(sender, *, stop, **kwargs):
        started.append(stop)

    watcher_started.connect(on_start, dispatch_uid="test-watcher-start")
    try:
        stop = threading.Event()
        stop.set()  # the watcher returns at once
        watcher.watch_forever(stop=stop)
    finally:
        watcher_started.disconnect(dispatch_uid="test-watcher-start")
    assert started == [stop]
