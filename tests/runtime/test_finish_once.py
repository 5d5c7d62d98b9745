"""Each exit is recorded once, on the scripted engine: a die event that comes while the launch
has not recorded RUNNING yet is not lost, two finishers racing archive the outputs once, and an
instant job keeps its port mappings."""

import threading
import time

import pytest

from jobs.execution import runs
from jobs.execution.watcher import handle_event
from jobs.models import Job
from jobs.user_actions.services import job_cancel
from tests.support.runtime import (
    SHARED_COMMANDS,
    containers_of,
    job_doc,
    log_text,
    submit,
    wait_for,
)
from tests.support.scripted_engine import Behaviour, ScriptedEngine

COMMANDS = {
    **SHARED_COMMANDS,
    "sh -c 'echo quick; sleep 300'": Behaviour(output=["quick"], runs_for=300),
    "echo 'Hello World!'": Behaviour(output=["Hello World!"]),
}


@pytest.fixture(autouse=True)
def _commands(scripted_engines):
    scripted_engines.script(COMMANDS)


def status_changes(job):
    return list(job.events.exclude(new_state="").order_by("id").values_list("new_state", flat=True))


def archived_events(job):
    return job.events.filter(message__startswith="outputs archived").count()


@pytest.mark.django_db(transaction=True)  # the watcher's handler closes stale connections
def test_a_die_event_before_running_is_recorded_still_ends_the_job(
    people, slave, runtime, monkeypatch
):
    """The container exits right after the launch looked at it (still running) and the
    watcher handles its die event while the job is STARTING: the job still goes RUNNING, then
    FAILED with the container's exit code, at once (no reconcile)."""
    inspect = ScriptedEngine.inspect
    raced = []

    def inspect_then_exit(self, container_id):
        state = inspect(self, container_id)
        if state.running and not raced:
            raced.append(container_id)
            self.finish(container_id, 5)
            assert Job.objects.get(container_id="").status == "STARTING"
            # The watcher's thread handles the die event now, the job still STARTING.
            event = {"action": "die", "labels": dict(state.labels)}
            watcher = threading.Thread(target=handle_event, args=(event,))
            watcher.start()
            watcher.join(timeout=10)
        return state

    monkeypatch.setattr(ScriptedEngine, "inspect", inspect_then_exit)
    job = submit(people, job_doc("sh -c 'echo quick; sleep 300'"))
    job.refresh_from_db()
    assert raced, "the launch never looked at its container"
    assert (job.status, job.exit_code, job.end_reason) == ("FAILED", 5, "exit code 5")
    assert status_changes(job)[-3:] == ["STARTING", "RUNNING", "FAILED"]
    assert job.container_id == raced[0] and "quick" in log_text(job)
    assert archived_events(job) == 1
    assert containers_of(slave, job) == []


@pytest.mark.django_db(transaction=True)  # finishers in threads: real commits
def test_two_finishers_at_once_archive_the_outputs_once(people, slave, engine, monkeypatch):
    job = submit(people, job_doc("sleep 300"))
    job.refresh_from_db()
    engine.write_file(job.container_id, "/job/outputs/result.txt", "42\n")
    engine.finish(job.container_id, 0)
    archive = runs.job_outputs_archive
    calls = []

    def slow_archive(**kwargs):
        calls.append(threading.current_thread().name)
        time.sleep(0.3)  # both finishers are past their checks before either ends the job
        return archive(**kwargs)

    monkeypatch.setattr(runs, "job_outputs_archive", slow_archive)
    finishers = [
        threading.Thread(target=finish_in_thread, args=(job.pk,), name=f"finisher-{n}")
        for n in range(2)
    ]
    for thread in finishers:
        thread.start()
    for thread in finishers:
        thread.join(timeout=20)
    job.refresh_from_db()
    assert len(calls) == 1, calls
    assert (job.status, job.exit_code) == ("FINISHED", 0)
    assert archived_events(job) == 1 and status_changes(job).count("FINISHED") == 1
    # A finish coming after the end (reconcile, a late event) archives nothing either.
    runs.job_finish_run(job_id=job.pk)
    assert len(calls) == 1 and archived_events(job) == 1


def finish_in_thread(job_id):
    from django.db import connection

    try:
        runs.job_finish_run(job_id=job_id)
    finally:
        connection.close()


@pytest.mark.django_db(transaction=True)
def test_a_cancel_while_the_finish_archives_does_not_archive_again(
    people, slave, engine, monkeypatch
):
    """The watcher's finish is copying the outputs when the user cancels: the stop task's own
    finish leaves the job to it, and it records the end the new status calls for."""
    user, _ = people
    job = submit(people, job_doc("sleep 300"))
    job.refresh_from_db()
    engine.finish(job.container_id, 0)
    archive = runs.job_outputs_archive
    calls, copying = [], threading.Event()

    def slow_archive(**kwargs):
        calls.append(1)
        copying.set()
        time.sleep(0.5)
        return archive(**kwargs)

    monkeypatch.setattr(runs, "job_outputs_archive", slow_archive)
    watcher = threading.Thread(target=finish_in_thread, args=(job.pk,))
    watcher.start()
    assert copying.wait(5)
    job_cancel(job=Job.objects.get(pk=job.pk), user=user)  # its stop task runs inline
    watcher.join(timeout=20)
    job.refresh_from_db()
    assert calls == [1]
    assert job.status == "CANCELLED" and archived_events(job) == 1
    assert status_changes(job)[-3:] == ["RUNNING", "CANCELLING", "CANCELLED"]


@pytest.mark.django_db
def test_a_finish_whose_worker_died_is_taken_over_after_the_grace(people, slave, engine, runtime):
    job = submit(people, job_doc("sleep 300"))
    job.refresh_from_db()
    engine.finish(job.container_id, 3)
    claimed = Job.objects.filter(pk=job.pk)
    claimed.update(finish_claimed_at=job.status_updated)  # a finisher took it, then was killed
    runtime.PORTAL_RECOVERY_GRACE_S = 3600
    runs.job_finish_run(job_id=job.pk)
    assert Job.objects.get(pk=job.pk).status == "RUNNING"  # still its holder's
    runtime.PORTAL_RECOVERY_GRACE_S = 0
    runs.job_finish_run(job_id=job.pk)
    job.refresh_from_db()
    assert (job.status, job.exit_code) == ("FAILED", 3) and archived_events(job) == 1


@pytest.mark.django_db
def test_an_instant_job_keeps_its_port_mappings(people, slave):
    ports = [{"containerPort": 80}, {"containerPort": 81, "hostPort": 20081}]
    job = submit(people, job_doc("echo 'Hello World!'", docker__portMappings=ports))
    job.refresh_from_db()
    assert job.status == "FINISHED" and "RUNNING" in status_changes(job)
    assert job.port_mappings == [
        {"containerPort": 81, "hostPort": 20081, "hostIp": ""},
        # Docker picked this one and released it at the exit: the mapping is kept, unknown.
        {"containerPort": 80, "hostPort": None, "hostIp": ""},
    ]


@pytest.mark.django_db
def test_a_running_job_reports_the_ports_read_back(people, slave):
    ports = [{"containerPort": 80}, {"containerPort": 81, "hostPort": 20082}]
    job = submit(people, job_doc("sleep 300", docker__portMappings=ports))
    job = wait_for(job, "RUNNING")
    by_port = {p["containerPort"]: p["hostPort"] for p in job.port_mappings}
    assert by_port[81] == 20082 and by_port[80] > 0 and len(job.port_mappings) == 2
