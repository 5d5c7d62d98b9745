"""request.extra.emailOn*: the right events fire the notification task, which sends the mail."""

import pytest
from django.core import mail
from django.utils import timezone

from jobs.execution.runs import job_restart_create
from jobs.models import Job
from jobs.transitions import job_transition
from notifications.job_emails import job_notify_send

pytestmark = pytest.mark.django_db
NOTIFY = "notifications.tasks.job_notify"


def notified(recorded):
    return [args for path, args in recorded if path == NOTIFY]


def with_lists(hello_world, **lists):
    hello_world["request"]["extra"] = lists
    return hello_world


def test_submit_and_end_notify_the_listed_addresses(
    submit, hello_world, recorded_tasks, django_capture_on_commit_callbacks, settings
):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    doc = with_lists(hello_world, emailOnQueue=["q@example.org"], emailOnEnd=["e@example.org"])
    with django_capture_on_commit_callbacks(execute=True):
        job = submit(doc)
    assert notified(recorded_tasks) == [(job.pk, "QUEUED")]

    assert job_notify_send(job_id=job.pk, event="QUEUED") == 1
    [message] = mail.outbox
    assert message.to == ["q@example.org"]
    assert "HelloWorld" in message.subject and "QUEUED" in message.subject
    assert str(job.uuid) in message.body

    Job.objects.filter(pk=job.pk).update(status="RUNNING", started_at=timezone.now())
    job.refresh_from_db()
    with django_capture_on_commit_callbacks(execute=True):
        job_transition(job=job, to="FAILED", fields={"end_reason": "exit code 3"})
    assert notified(recorded_tasks)[-1] == (job.pk, "FAILED")
    assert job_notify_send(job_id=job.pk, event="FAILED") == 1
    assert mail.outbox[-1].to == ["e@example.org"]
    assert "exit code 3" in mail.outbox[-1].body


def test_events_without_a_list_send_nothing(
    submit, hello_world, recorded_tasks, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        job = submit(with_lists(hello_world, emailOnEnd=["e@example.org"]))
        job_transition(job=job, to="ASSIGNED")
    assert notified(recorded_tasks) == []
    assert job_notify_send(job_id=job.pk, event="RUNNING") == 0


def test_restart_notifies_the_restart_list(
    submit, hello_world, recorded_tasks, django_capture_on_commit_callbacks
):
    doc = with_lists(hello_world, emailOnRestart=["r@example.org"])
    doc["request"]["scheduling"]["restartable"] = True
    job = submit(doc)
    now = timezone.now()
    Job.objects.filter(pk=job.pk).update(
        status="HALTED", started_at=now - timezone.timedelta(hours=1), ended_at=now
    )
    job.refresh_from_db()
    with django_capture_on_commit_callbacks(execute=True):
        follow = job_restart_create(job=job)
    assert follow.restart_count == 1
    assert notified(recorded_tasks) == [(job.pk, "RESTARTED")]
