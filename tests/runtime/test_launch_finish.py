"""Launch and finish on the scripted engine: observable outcomes only (status, reasons,
events, logs, the containers left on the engine)."""

from types import SimpleNamespace

import pytest

from clusters.runtime.spec import ContainerSpec
from core import tasks
from jobs.execution.container_spec import LABEL_JOB, container_spec
from jobs.execution.runs import job_finish_run, job_launch_run
from jobs.models import Job
from jobs.scheduler_bridge.tick import tick
from jobs.user_actions.services import job_cancel
from tests.support.runtime import SHARED_COMMANDS, containers_of, job_doc, log_text, submit
from tests.support.scripted_engine import Behaviour, ScriptedEngine

pytestmark = pytest.mark.django_db

COMMANDS = {
    **SHARED_COMMANDS,
    "sh -c 'echo hello; sleep 300'": Behaviour(output=["hello"], runs_for=300),
    "echo 'Hello World!'": Behaviour(output=["Hello World!"]),
    "sh -c 'echo oops; exit 3'": Behaviour(output=["oops"], exit_code=3),
    "sh -c 'echo started; sleep 300'": Behaviour(output=["started"], runs_for=300),
    "no-such-program": Behaviour(not_found=True),
    "sleep 9": Behaviour(runs_for=9),
}


@pytest.fixture(autouse=True)
def _commands(scripted_engines):
    scripted_engines.script(COMMANDS)


def events(job):
    return list(job.events.values_list("message", flat=True))


def test_job_runs_and_finishes_with_its_log_archived(people, slave, engine):
    job = submit(people, job_doc("sh -c 'echo hello; sleep 300'", docker__portMappings=[80]))
    job.refresh_from_db()
    assert job.status == "RUNNING" and job.slave == slave and job.container_id
    (container,) = containers_of(slave, job)
    assert container.id == job.container_id and container.running
    assert container.labels["gpuportal.instance"] == slave_instance()
    assert [p["containerPort"] for p in job.port_mappings] == [80]
    assert job.port_mappings[0]["hostPort"] > 0
    engine.finish(job.container_id, 0)
    job_finish_run(job_id=job.pk)
    job.refresh_from_db()
    assert (job.status, job.exit_code, job.log_archived) == ("FINISHED", 0, True)
    assert log_text(job) == "hello\n"
    assert containers_of(slave, job) == []


def slave_instance():
    from django.conf import settings

    return settings.PORTAL_INSTANCE


def test_a_job_that_exits_at_once_finishes_without_a_watcher(people, slave):
    job = submit(people, job_doc("echo 'Hello World!'"))
    job.refresh_from_db()
    assert job.status == "FINISHED" and job.exit_code == 0
    assert log_text(job) == "Hello World!\n"
    assert containers_of(slave, job) == []


def test_non_zero_exit_fails_with_the_exit_code(people, slave):
    job = submit(people, job_doc("sh -c 'echo oops; exit 3'"))
    job.refresh_from_db()
    assert job.status == "FAILED" and job.exit_code == 3
    assert job.end_reason == "exit code 3" and "oops" in log_text(job)


def test_oom_kill_is_reported(people, slave, engine):
    job = submit(people, job_doc("sleep 300"))
    job.refresh_from_db()
    engine.finish(job.container_id, 137, oom_killed=True)
    job_finish_run(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == "FAILED" and job.exit_code == 137
    assert "killed by the kernel for using more than its 1 GB memory" in job.end_reason


def test_missing_image_is_pulled_first(people, slave, engine, scripted_engines):
    scripted_engines.registry_add("example.org/team/tool:v2")
    job = submit(people, job_doc("true", image="example.org/team/tool:v2"))
    job.refresh_from_db()
    assert job.status == "FINISHED", job.end_reason
    assert "pulling example.org/team/tool:v2" in events(job)
    assert engine.image_present("example.org/team/tool:v2")


def test_image_that_cannot_be_pulled_fails_the_job(people, slave):
    job = submit(people, job_doc("true", image="example.org/team/no-such-tool:v2"))
    job.refresh_from_db()
    assert job.status == "FAILED"
    assert job.end_reason.startswith("could not start the container: pull ")
    assert "manifest unknown" in job.end_reason


def test_unknown_executable_fails_and_leaves_no_container(people, slave):
    job = submit(people, job_doc(["no-such-program"]))
    job.refresh_from_db()
    assert job.status == "FAILED" and "executable file not found" in job.end_reason
    assert containers_of(slave, job) == []


@pytest.fixture
def no_backoff(monkeypatch):
    """Launch retries back off with time.sleep: skip the wait, keep the retry."""
    monkeypatch.setattr("jobs.execution.runs.time", SimpleNamespace(sleep=lambda s: None))


def test_transient_failure_is_retried(people, slave, engine, no_backoff):
    engine.fail_next("run", permanent=False, message="create: connection reset by peer")
    job = submit(people, job_doc("sleep 300"))
    job.refresh_from_db()
    assert job.status == "RUNNING"
    assert len(containers_of(slave, job)) == 1


def test_permanent_failure_fails_without_retry(people, slave, engine):
    engine.fail_next("run", permanent=True, message="create: invalid mount config", times=1)
    engine.fail_next("run", permanent=True, message="create: should never be seen", times=1)
    job = submit(people, job_doc("sleep 300"))
    job.refresh_from_db()
    assert job.status == "FAILED"
    assert job.end_reason == "could not start the container: create: invalid mount config"
    assert containers_of(slave, job) == []


def test_transient_failures_that_persist_fail_the_job(
    people, slave, engine, monkeypatch, no_backoff
):
    monkeypatch.setattr("jobs.execution.runs.LAUNCH_ATTEMPTS", 2)
    engine.fail_next("run", permanent=False, message="create: engine busy", times=-1)
    job = submit(people, job_doc("sleep 300"))
    job.refresh_from_db()
    assert job.status == "FAILED" and job.end_reason.endswith("create: engine busy")


def assigned_job(people, settings, document):
    """A job the scheduler assigned whose launch task has not run yet."""
    settings.PORTAL_TASK_MODE = "record"
    job = submit(people, document)
    tick()
    job.refresh_from_db()
    assert job.status == "ASSIGNED"
    settings.PORTAL_TASK_MODE = "inline"
    return job


def test_retried_launch_adopts_the_running_container(people, slave, engine, runtime):
    job = assigned_job(people, runtime, job_doc("sleep 300"))
    first = engine.run(container_spec(job, slave, []))  # a launch that died after run
    job_launch_run(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == "RUNNING" and job.container_id == first
    assert [c.id for c in containers_of(slave, job)] == [first]


def test_retried_launch_starts_a_created_container(people, slave, engine, runtime):
    job = assigned_job(people, runtime, job_doc("sleep 300"))
    created = engine.create(container_spec(job, slave, []))  # died between create and start
    assert engine.inspect(created).status == "created"
    job_launch_run(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == "RUNNING" and job.container_id == created
    assert engine.inspect(created).running


def test_launch_twice_is_harmless(people, slave, engine):
    job = submit(people, job_doc("sleep 300"))
    job_launch_run(job_id=job.pk)  # a duplicate task: the job is RUNNING already
    job_launch_run(job_id=Job.objects.order_by("-pk").first().pk + 1000)  # no such job
    job.refresh_from_db()
    assert job.status == "RUNNING" and len(containers_of(slave, job)) == 1


def test_cancel_during_launch_stops_the_new_container(people, slave, engine, runtime):
    job = assigned_job(people, runtime, job_doc("sh -c 'echo started; sleep 300'"))
    user, _ = people

    def cancel_now():
        runtime.PORTAL_TASK_MODE = "record"  # the stop task waits in the queue meanwhile
        job_cancel(job=Job.objects.get(pk=job.pk), user=user)

    engine.before_next("create", cancel_now)
    job_launch_run(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == "CANCELLED" and job.container_id
    assert ("jobs.tasks.job_stop", (job.pk,)) in tasks.recorded
    assert containers_of(slave, job) == []
    assert "started" in log_text(job)


def test_finish_ignores_a_container_still_running(people, slave, engine):
    job = submit(people, job_doc("sleep 300"))
    job_finish_run(job_id=job.pk)  # a spurious event
    job.refresh_from_db()
    assert job.status == "RUNNING" and engine.inspect(job.container_id).running


def test_finish_of_a_vanished_container_fails_the_job(people, slave, engine):
    job = submit(people, job_doc("sleep 300"))
    job.refresh_from_db()
    engine.remove(job.container_id)
    job_finish_run(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == "FAILED"
    assert job.end_reason == "the container disappeared from the slave"


def test_finish_waits_while_the_slave_is_unreachable(people, slave, engine):
    job = submit(people, job_doc("sleep 300"))
    job.refresh_from_db()
    engine.finish(job.container_id, 0)
    engine.set_unreachable()
    job_finish_run(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == "RUNNING"  # reconcile finishes it once the slave answers
    engine.set_unreachable(False)
    job_finish_run(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == "FINISHED"


def test_a_container_that_cannot_be_removed_does_not_block_the_end(people, slave, engine):
    job = submit(people, job_doc("sleep 300"))
    job.refresh_from_db()
    engine.finish(job.container_id, 0)
    engine.fail_next("remove", message="remove: engine busy")
    job_finish_run(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == "FINISHED"
    assert [c.id for c in containers_of(slave, job)] == [job.container_id]  # reconcile's job


def test_the_same_daemon_behind_every_engine_for_one_url(slave):
    one, two = ScriptedEngine(slave.docker_url), ScriptedEngine(slave.docker_url)
    other = ScriptedEngine("fake://somewhere-else")
    container = one.run(ContainerSpec(image="gpuportal/busybox:latest", command=["sleep", "9"]))
    assert two.inspect(container).running
    assert other.list_by_labels({}) == []
    assert one.find_by_label(LABEL_JOB, "x") == []
