"""The sessions' lifecycle (interactive/lifecycle.py): the decision table, then sweeps over rows
with the real clock, and the sweep and its mail through django-q2's queue."""

from datetime import UTC, datetime, timedelta

import pytest
from django.core import mail
from django.utils import timezone

from core import tasks
from interactive import task_names
from interactive.lifecycle import END_MARGIN, Kind, SessionFacts, police_decide, sessions_police
from interactive.models import InteractiveSession
from interactive.services import SessionPolicy
from jobs.models import Job, JobSample
from jobs.states import JobStatus
from tests.support.brokers import use_broker

T0 = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)
POLICY = SessionPolicy(
    idle_s=3600, warn_s=600, extend_s=7200, max_extends=3, max_s=72 * 3600, max_gpus=2
)


def facts(**overrides) -> SessionFacts:
    values = {
        "session_id": 1,
        "status": JobStatus.RUNNING,
        "started_at": T0,
        "ends_at": T0 + timedelta(hours=4),
        "last_activity_at": None,
        "gpu_busy_at": None,
        "idle_warned_at": None,
        "end_warned_at": None,
        "upstream": "10.0.0.5:8888",
    }
    return SessionFacts(**{**values, **overrides})


def kinds(now, **overrides) -> list[Kind]:
    return [a.kind for a in police_decide([facts(**overrides)], now, POLICY)]


M = timedelta(minutes=1)


@pytest.mark.parametrize(
    "now, overrides, expected",
    [
        # Idle: quiet until 10 minutes before the hour without use, then warned once.
        (T0 + 49 * M, {}, []),
        (T0 + 50 * M, {}, [Kind.WARN_IDLE]),
        (T0 + 55 * M, {"idle_warned_at": T0 + 50 * M}, []),
        # Culled at the hour, once warned; not sooner than 10 minutes after a late warning.
        (T0 + 60 * M, {"idle_warned_at": T0 + 50 * M}, [Kind.CULL_IDLE]),
        (T0 + 90 * M, {}, [Kind.WARN_IDLE]),
        (T0 + 95 * M, {"idle_warned_at": T0 + 90 * M}, []),
        (T0 + 100 * M, {"idle_warned_at": T0 + 90 * M}, [Kind.CULL_IDLE]),
        # Use through the proxy, or a busy GPU, starts the count again (an old warning no
        # longer counts).
        (T0 + 60 * M, {"last_activity_at": T0 + 30 * M}, []),
        (T0 + 60 * M, {"gpu_busy_at": T0 + 40 * M, "idle_warned_at": T0 + 35 * M}, []),
        (
            T0 + 90 * M,
            {"gpu_busy_at": T0 + 40 * M, "idle_warned_at": T0 + 35 * M},
            [Kind.WARN_IDLE],
        ),
        # The time box: warned 10 minutes before its end, halted just before it.
        (T0 + 229 * M, {"last_activity_at": T0 + 220 * M}, []),
        (T0 + 230 * M, {"last_activity_at": T0 + 220 * M}, [Kind.WARN_END]),
        (
            T0 + 235 * M,
            {"last_activity_at": T0 + 220 * M, "end_warned_at": T0 + 230 * M},
            [],
        ),
        (T0 + 240 * M - END_MARGIN, {"last_activity_at": T0 + 239 * M}, [Kind.END]),
        # Only running sessions; a missing upstream is recorded again.
        (T0 + 90 * M, {"status": JobStatus.MUSTHALT}, []),
        (T0 + M, {"upstream": ""}, [Kind.RECORD_UPSTREAM]),
    ],
)
def test_the_decision_table(now, overrides, expected):
    assert kinds(now, **overrides) == expected


def test_messages_say_what_and_when():
    (warn,) = police_decide([facts()], T0 + 50 * M, POLICY)
    assert warn.at == T0 + 60 * M
    assert "culled at 2026-11-26 13:00 UTC unless it is used" in warn.message
    (cull,) = police_decide([facts(idle_warned_at=T0 + 50 * M)], T0 + 60 * M, POLICY)
    assert cull.message == "culled: no activity for 60 min"


# --- over rows, with the real clock ----------------------------------------------------------


@pytest.fixture
def session(submit, member, settings, commits, tiny_template):
    settings.PORTAL_SESSION_IDLE_SECONDS = 3600
    settings.PORTAL_SESSION_WARN_SECONDS = 600
    job = submit()
    Job.objects.filter(pk=job.pk).update(
        status=JobStatus.RUNNING,
        interactive=True,
        started_at=timezone.now() - timedelta(minutes=55),
        max_duration_s=4 * 3600,
    )
    # A template: the sweep polices only the sessions the portal started (a row without one is
    # a job's web port, tests/interactive/test_web_ports.py).
    return InteractiveSession.objects.create(
        job=job,
        template=tiny_template,
        port=8888,
        upstream="10.0.0.5:8888",
        created_at=timezone.now(),
    )


def history(session) -> list[str]:
    return list(session.job.events.values_list("message", flat=True))


def test_an_idle_session_is_warned_then_culled_by_the_halt(session, recorded_tasks):
    done = sessions_police()
    assert [a.kind for a in done] == [Kind.WARN_IDLE]
    assert (task_names.SESSION_WARNING_MAIL, (session.pk, done[0].message)) in recorded_tasks
    assert any(m.startswith("session warning: idle: no activity since") for m in history(session))
    assert sessions_police() == []  # warned once

    # Eleven minutes later, still unused: the GPULab halt, its reason in the history.
    InteractiveSession.objects.filter(pk=session.pk).update(
        idle_warned_at=timezone.now() - timedelta(minutes=11)
    )
    Job.objects.filter(pk=session.job_id).update(started_at=timezone.now() - timedelta(minutes=66))
    assert [a.kind for a in sessions_police()] == [Kind.CULL_IDLE]
    job = Job.objects.get(pk=session.job_id)
    assert job.status == JobStatus.MUSTHALT
    assert job.halt_events[-1]["reason"] == "culled: no activity for 60 min"
    assert "halt requested: culled: no activity for 60 min" in history(session)
    assert ("jobs.tasks.job_halt", (job.pk,)) in recorded_tasks


def test_gpu_use_keeps_a_session_without_requests(session):
    JobSample.objects.create(
        job=session.job,
        time=timezone.now() - timedelta(minutes=2),
        cpu_percent=5,
        memory_mb=100,
        net_rx_kbps=0,
        net_tx_kbps=0,
        gpus=[{"index": 0, "percent": 97.0, "memoryUsedMb": 900}],
        cpu_ns=0,
        net_rx_bytes=0,
        net_tx_bytes=0,
    )
    assert sessions_police() == []


def test_the_end_of_the_time_box_is_warned(session, settings):
    Job.objects.filter(pk=session.job_id).update(max_duration_s=60 * 60)  # ends in 5 minutes
    InteractiveSession.objects.filter(pk=session.pk).update(last_activity_at=timezone.now())
    assert [a.kind for a in sessions_police()] == [Kind.WARN_END]
    session.refresh_from_db()
    assert session.end_warned_at is not None
    assert any("time box ends at" in m for m in history(session))


# --- through django-q2's queue ----------------------------------------------------------------


def test_the_sweep_and_its_mail_through_the_queue(session, monkeypatch, settings):
    probe = use_broker("orm", monkeypatch, settings)
    tasks.fire(task_names.SESSIONS_SWEEP)
    assert probe.calls() == [(task_names.SESSIONS_SWEEP,)]
    assert probe.run_next() == (task_names.SESSIONS_SWEEP,)
    (mail_call,) = probe.calls()
    assert mail_call[:2] == (task_names.SESSION_WARNING_MAIL, session.pk)
    probe.run_next()
    (message,) = mail.outbox
    assert message.to == ["alice@example.org"]
    assert "will be culled at" in message.body and session.key in message.body
    assert session.app_token not in message.body
