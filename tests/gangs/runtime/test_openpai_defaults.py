"""OpenPAI's defaults as its REST server applies them (issue 27 item 1): a task role that omits
``minFailedTaskCount`` fails the job at its first failed task, so ``retryCount`` retries it,
and the job's state agrees with its tasks' (docs/openpai.md, "Completion and retry")."""

import pytest

from gangs.models import JobGang
from jobs.states import JobStatus
from tests.gangs.runtime.test_openpai_gang import config, finish, role, run, statuses, tasks_of
from tests.support.runtime import add_slave
from tests.support.scripted_engine import Behaviour

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _commands(scripted_engines):
    scripted_engines.script({("/bin/sh", "-c", "sleep 300"): Behaviour(runs_for=300)})


@pytest.fixture
def slave(people):
    return add_slave("mem", "fake://defaults")


def test_the_only_task_failing_fails_the_job_and_retry_count_retries_it(people, slave):
    """The seed's retryCount with the counts omitted, as its examples write them: each
    attempt's only task fails, each attempt ends FAILED and the next one runs, retryCount 2
    times; the last attempt's FAILED is the job's."""
    first = run(people, config(role("main", 1, gpus=0), name="retried", retryCount=2))
    gang = JobGang.objects.get(pk=first[0].gang_id)
    for attempt in (1, 2, 3):
        (task,) = tasks_of(first[0], attempt=attempt)
        assert task.status == JobStatus.RUNNING
        finish(task, 3)
        assert statuses([task]) == [JobStatus.FAILED]  # the task's GPULab view
        gang.refresh_from_db()
        if attempt < 3:
            assert (gang.status, gang.attempt) == (JobStatus.QUEUED, attempt + 1)
    assert (gang.status, gang.attempt) == (JobStatus.FAILED, 3)
    assert "1 task(s) of role main failed (minFailedTaskCount 1)" in gang.end_reason
    assert [(a["attempt"], a["status"]) for a in gang.attempts] == [
        (1, JobStatus.FAILED),
        (2, JobStatus.FAILED),
        (3, JobStatus.FAILED),
    ]
    # The job and each of its tasks say the same.
    assert {t["status"] for a in gang.attempts for t in a["tasks"]} == {JobStatus.FAILED}


def test_the_seed_example_fails_at_its_first_failed_parameter_server(people, slave):
    """Both roles of the seed's example omit minFailedTaskCount: one failed ps_server fails the
    whole job (it did not: "all tasks completed (1 failed, no minFailedTaskCount reached)")."""
    doc = config(
        role("ps_server", 1, gpus=0),
        role("worker", 1, gpus=0, minSucceededTaskCount=1),
        name="seedlike",
    )
    tasks = run(people, doc)
    finish(tasks[0], 1)
    assert statuses(tasks) == [JobStatus.FAILED, JobStatus.CANCELLED]
    gang = JobGang.objects.get(pk=tasks[0].gang_id)
    assert gang.status == JobStatus.FAILED
    assert "role ps_server failed (minFailedTaskCount 1)" in gang.end_reason
