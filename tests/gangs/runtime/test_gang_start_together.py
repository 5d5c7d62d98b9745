"""A gang starts together (issue 27 item 3): every task's container is created before any starts,
then all are started in one step; a gang whose containers cannot all be created never runs a
task; a task that exited 0 on its own is FINISHED even when the gang's policy stopped it an
instant later (today's ps_server-0 was recorded CANCELLED with exit code 0 and "outputs not
copied: ContainerNotFound"). On the scripted engine (tests/support/scripted_engine.py)."""

import pytest

from clusters.services import engine_for
from gangs.models import JobGang
from jobs.execution.container_spec import LABEL_JOB
from jobs.execution.runs import job_finish_run
from jobs.models import Job
from jobs.states import JobStatus
from tests.gangs.runtime.test_openpai_gang import config, role, run, statuses
from tests.support.runtime import add_slave
from tests.support.scripted_engine import Behaviour

pytestmark = pytest.mark.django_db
SERVE = ("/bin/sh", "-c", "sleep 300")


@pytest.fixture(autouse=True)
def _commands(scripted_engines):
    scripted_engines.script({SERVE: Behaviour(runs_for=300)})


@pytest.fixture
def two_slaves(people):
    return add_slave("mem", "fake://together-1"), add_slave("mem2", "fake://together-2")


def containers(slaves, name: str) -> dict[str, tuple[bool, bool]]:
    """Each task of the gang: (its container exists, it runs), on whichever slave."""
    seen = {}
    for task in Job.objects.filter(gang__name=name):
        found = []
        for slave in slaves:
            with engine_for(slave) as engine:
                found += engine.find_by_label(LABEL_JOB, str(task.uuid))
        seen[task.name] = (bool(found), any(c.running for c in found))
    return seen


def test_every_container_is_created_before_any_starts(people, two_slaves):
    snapshots: list[dict] = []
    for slave in two_slaves:
        with engine_for(slave) as engine:
            engine.before_next("start", lambda: snapshots.append(containers(two_slaves, "pack")))
    # Two 2-GPU workers: one on each slave.
    tasks = run(people, config(role("ps", 1, gpus=0), role("worker", 2, gpus=2), name="pack"))
    assert statuses(tasks) == [JobStatus.RUNNING] * 3
    assert {t.slave.name for t in tasks} == {"mem", "mem2"}
    # At the first start, every task's container existed and none ran yet; at the first on
    # the other engine (the same step, a moment later) they all existed still.
    assert len(snapshots) == 2, snapshots
    assert snapshots[0] == {t.name: (True, False) for t in tasks}
    assert all(exists for exists, _ in snapshots[1].values())
    gang = JobGang.objects.get(pk=tasks[0].gang_id)
    assert gang.started_attempt == 1
    first_events = list(tasks[0].events.values_list("message", flat=True))
    assert any("all 3 containers created, starting them together" in m for m in first_events)
    # Started in one step: no task ended or started before the others existed.
    assert all(t.started_at is not None for t in tasks)


def test_a_gang_whose_containers_cannot_all_be_created_runs_no_task(people, two_slaves):
    # The second slave refuses every create: its tasks fail, the others never start.
    with engine_for(two_slaves[1]) as engine:
        engine.fail_next(
            "create", message="create: no space left on device", permanent=True, times=-1
        )
    # minFailedTaskCount null: no count fails the job, only that it can no longer start whole.
    tasks = run(people, config(role("worker", 2, gpus=2, minFailedTaskCount=None), name="halfway"))
    statuses(tasks)
    on_second = [t for t in tasks if t.slave_id == two_slaves[1].pk]
    assert on_second and all(t.status == JobStatus.FAILED for t in on_second)
    others = [t for t in tasks if t.slave_id != two_slaves[1].pk]
    assert others and all(t.status == JobStatus.CANCELLED for t in others), [
        (t.name, t.status, t.end_reason) for t in tasks
    ]
    assert all(t.started_at is None and t.exit_code is None for t in tasks)  # none ever ran
    gang = JobGang.objects.get(pk=tasks[0].gang_id)
    assert gang.status == JobStatus.FAILED
    assert gang.end_reason == "a task ended before all tasks of the gang could start"
    assert gang.started_attempt == 0
    # Their containers were created, never started, and are gone.
    assert containers(two_slaves, "halfway") == {t.name: (False, False) for t in tasks}


def test_a_task_that_exited_0_before_the_policy_stopped_it_is_finished(people, two_slaves):
    """The seed's shape: workers' minSucceededTaskCount 2 ends the job; the parameter server
    had already exited 0 by itself when the policy stopped it."""
    tasks = run(
        people,
        config(
            role("ps_server", 1, gpus=0),
            role("worker", 2, gpus=2, minSucceededTaskCount=2),
            name="seedshape",
        ),
    )
    assert statuses(tasks) == [JobStatus.RUNNING] * 3
    ps, *workers = tasks
    with engine_for(ps.slave) as engine:
        engine.finish(ps.container_id, 0)  # exited; its finish not processed yet
    for worker in workers:
        worker.refresh_from_db()
        with engine_for(worker.slave) as engine:
            engine.finish(worker.container_id, 0)
        job_finish_run(job_id=worker.pk)
    assert statuses(tasks) == [JobStatus.FINISHED] * 3
    ps.refresh_from_db()
    assert ps.exit_code == 0 and ps.end_reason == "exited 0 before the cancel reached it"
    assert not ps.events.filter(message__contains="outputs not copied").exists()
    gang = JobGang.objects.get(pk=ps.gang_id)
    assert gang.status == JobStatus.FINISHED


def test_a_task_still_running_when_the_policy_ends_the_job_is_stopped(people, two_slaves):
    """It joined the run and was stopped by it: CANCELLED, as OpenPAI stops a task to complete
    the attempt (OpenPAI's REST API shows it STOPPED)."""
    tasks = run(
        people,
        config(
            role("ps_server", 1, gpus=0),
            role("worker", 2, gpus=2, minSucceededTaskCount=2),
            name="stopsps",
        ),
    )
    ps, *workers = tasks
    for worker in workers:
        worker.refresh_from_db()
        with engine_for(worker.slave) as engine:
            engine.finish(worker.container_id, 0)
        job_finish_run(job_id=worker.pk)
    assert statuses(tasks) == [JobStatus.CANCELLED, JobStatus.FINISHED, JobStatus.FINISHED]
    assert ps.started_at is not None  # it ran
    assert ps.end_reason.startswith("stopped: gang stopsps attempt 1 FINISHED")
