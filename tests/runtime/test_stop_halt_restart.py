"""Cancel (stop), halt and restart on the scripted engine."""

import pytest

from jobs.execution.runs import job_halt_run, job_restart_create, job_stop_run
from jobs.models import Job
from jobs.user_actions.services import job_cancel, job_halt_request
from tests.support.runtime import (
    HALTABLE,
    SHARED_COMMANDS,
    STUBBORN,
    containers_of,
    job_doc,
    log_text,
    submit,
)
from tests.support.scripted_engine import Behaviour, Reaction

pytestmark = pytest.mark.django_db

TRAPS_TERM = "sh -c 'trap \"echo bye; exit 0\" TERM; while :; do sleep 1; done'"
COMMANDS = {
    **SHARED_COMMANDS,
    "sh -c 'echo started; sleep 300'": Behaviour(output=["started"], runs_for=300),
    TRAPS_TERM: Behaviour(runs_for=None, on_signal={"TERM": Reaction(["bye"], exit_code=0)}),
}


@pytest.fixture(autouse=True)
def _commands(scripted_engines):
    scripted_engines.script(COMMANDS)


def running(people, command, **extra) -> Job:
    job = submit(people, job_doc(command, **extra))
    job.refresh_from_db()
    assert job.status == "RUNNING", job.end_reason
    return job


def messages(job):
    return list(job.events.values_list("message", flat=True))


# --- cancel --------------------------------------------------------------------------------


def test_cancel_stops_the_container_and_keeps_the_log(people, slave):
    user, _ = people
    job = running(people, "sh -c 'echo started; sleep 300'")
    job_cancel(job=job, user=user)
    job.refresh_from_db()
    assert job.status == "CANCELLED" and job.exit_code == 137  # SIGTERM ignored: killed
    assert job.end_reason == "cancelled by carol"
    assert "started" in log_text(job)
    assert containers_of(slave, job) == []


def test_cancel_of_a_job_that_traps_sigterm(people, slave):
    user, _ = people
    job = running(people, TRAPS_TERM)
    job_cancel(job=job, user=user)
    job.refresh_from_db()
    assert job.status == "CANCELLED" and job.exit_code == 0 and "bye" in log_text(job)


def test_cancel_without_a_container_ends_at_once(people, slave, engine, runtime):
    user, _ = people
    job = running(people, "sleep 300")
    engine.remove(job.container_id)
    Job.objects.filter(pk=job.pk).update(container_id="")  # as if the launch never saved it
    job.refresh_from_db()
    job_cancel(job=job, user=user)
    job.refresh_from_db()
    assert job.status == "CANCELLED"


def test_cancel_of_a_vanished_container_ends_at_once(people, slave, engine):
    user, _ = people
    job = running(people, "sleep 300")
    engine.remove(job.container_id)
    job_cancel(job=job, user=user)
    job.refresh_from_db()
    assert job.status == "CANCELLED"


def test_cancel_finds_the_container_by_its_label(people, slave, engine, runtime):
    user, _ = people
    job = running(people, "sleep 300")
    container_id = job.container_id
    Job.objects.filter(pk=job.pk).update(container_id="")
    job.refresh_from_db()
    job_cancel(job=job, user=user)
    job.refresh_from_db()
    assert job.status == "CANCELLED" and job.container_id == container_id
    assert containers_of(slave, job) == []


def test_cancel_waits_while_the_slave_is_unreachable(people, slave, engine, runtime):
    user, _ = people
    job = running(people, "sleep 300")
    engine.set_unreachable()
    job_cancel(job=job, user=user)
    job.refresh_from_db()
    assert job.status == "CANCELLING"
    engine.set_unreachable(False)
    job_stop_run(job_id=job.pk)  # the retry (reconcile or the task queue)
    job.refresh_from_db()
    assert job.status == "CANCELLED"
    job_stop_run(job_id=job.pk)  # once more: nothing left to do
    assert Job.objects.get(pk=job.pk).status == "CANCELLED"


# --- halt ----------------------------------------------------------------------------------


def test_halt_obeyed_with_exit_123_and_restartable_restarts(people, slave):
    user, _ = people
    job = running(people, HALTABLE, scheduling__restartable=True, scheduling__maxDuration="2 hours")
    job_halt_request(job=job, user=user)
    job.refresh_from_db()
    assert job.status == "HALTED" and job.exit_code == 123, job.end_reason
    assert "saw-usr1" in log_text(job)
    follow = Job.objects.get(restart_of=job)
    assert follow.restart_count == 1 and follow.initial_job_uuid == job.uuid
    assert follow.max_duration_s <= 2 * 3600
    assert follow.status == "RUNNING"  # the tick after the halt placed the continuation
    assert f"restart-count=1 initial={job.uuid}" in log_text(follow)
    assert f"restarted as {follow.uuid}" in messages(job)


def test_halt_not_obeyed_kills_after_the_grace_period(people, slave):
    user, _ = people
    job = running(people, STUBBORN)
    job_halt_request(job=job, user=user)
    job.refresh_from_db()
    assert job.status == "FAILED" and job.exit_code == 137
    assert job.end_reason.startswith("halt procedure not obeyed: no exit with code 123 within")
    assert "halt: no exit within 0.3 s: killed" in messages(job)
    assert "ignored" in log_text(job)
    assert not Job.objects.filter(restart_of=job).exists()


def test_halt_without_signal_when_allowed(people, slave):
    user, _ = people
    job = running(people, "sleep 300", scheduling__allowHaltWithoutSignal=True)
    job_halt_request(job=job, user=user)
    job.refresh_from_db()
    assert job.status == "HALTED" and job.exit_code == 137


@pytest.mark.parametrize(("code", "status"), [(0, "FINISHED"), (4, "FAILED")])
def test_a_job_that_exited_on_its_own_before_its_halt_ends_by_its_exit_code(
    people, slave, engine, runtime, code, status
):
    """The halt-vs-finish race (issue 10 item 9): never "halt procedure not obeyed"."""
    user, _ = people
    job = running(people, "sleep 300")
    runtime.PORTAL_TASK_MODE = "record"
    job_halt_request(job=job, user=user)  # the halt task waits in the queue
    engine.finish(job.container_id, code)  # and the job exits on its own meanwhile
    runtime.PORTAL_TASK_MODE = "inline"
    job_halt_run(job_id=job.pk)
    job.refresh_from_db()
    assert (job.status, job.exit_code) == (status, code)
    assert "not obeyed" not in job.end_reason


def test_halt_of_a_vanished_container_fails(people, slave, engine, runtime):
    user, _ = people
    job = running(people, HALTABLE)
    runtime.PORTAL_TASK_MODE = "record"
    job_halt_request(job=job, user=user)
    engine.remove(job.container_id)
    runtime.PORTAL_TASK_MODE = "inline"
    job_halt_run(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == "FAILED" and "disappeared" in job.end_reason


def test_halt_waits_while_the_slave_is_unreachable(people, slave, engine, runtime):
    user, _ = people
    job = running(people, HALTABLE)
    engine.set_unreachable()
    job_halt_request(job=job, user=user)
    job.refresh_from_db()
    assert job.status == "HALTING"
    job_halt_run(job_id=job.pk)  # not MUSTHALT any more: a duplicate task does nothing
    assert Job.objects.get(pk=job.pk).status == "HALTING"


# --- restart -------------------------------------------------------------------------------


def test_no_restart_with_less_than_a_minute_left(people, slave):
    user, _ = people
    job = running(
        people, HALTABLE, scheduling__restartable=True, scheduling__maxDuration="1 minute"
    )
    Job.objects.filter(pk=job.pk).update(started_at=job.started_at.replace(year=2000))
    job_halt_request(job=Job.objects.get(pk=job.pk), user=user)
    job.refresh_from_db()
    assert job.status == "HALTED"
    assert not Job.objects.filter(restart_of=job).exists()
    assert "not restarted: less than a minute of maxDuration left" in messages(job)


def test_restart_keeps_the_request_with_the_remaining_duration(people, slave):
    job = running(people, "sleep 300", scheduling__restartable=True)
    job.refresh_from_db()
    follow = job_restart_create(job=job)
    assert follow.status == "QUEUED" and follow.restart_of == job
    assert follow.request["docker"] == job.request["docker"]
    assert follow.max_duration_s <= job.max_duration_s
