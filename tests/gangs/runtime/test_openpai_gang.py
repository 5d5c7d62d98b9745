"""Multi-task OpenPAI jobs on the scripted engine: gang start with ports and peers, a gang that
waits whole, completion policies, retry, cancel and halt of the whole gang (gangs/)."""

import copy
import uuid
from pathlib import Path

import pytest
from django.conf import settings

from clusters.services import engine_for
from gangs.completion import gang_recheck_all
from gangs.models import JobGang
from gangs.policy import gang_outcome
from jobs.execution.runs import job_finish_run
from jobs.models import Job
from jobs.states import JobStatus
from jobs.user_actions.registry import ACTIONS
from jobs.user_actions.services import job_halt_request, job_submit
from tests.support.runtime import TEST_IMAGE, add_slave, job_doc, submit
from tests.support.scripted_engine import Behaviour, Reaction

pytestmark = pytest.mark.django_db
# Obeys a halt (exit 123 on SIGUSR1); OpenPAI commands run through /bin/sh -c already.
HALTABLE = 'trap "echo saw-usr1; exit 123" USR1; while true; do sleep 0.2; done'
COMMANDS = {
    "sleep 300": Behaviour(runs_for=300),  # a plain job beside the gangs
    ("/bin/sh", "-c", "sleep 300"): Behaviour(runs_for=300),
    ("/bin/sh", "-c", HALTABLE): Behaviour(
        runs_for=None, on_signal={"USR1": Reaction(["saw-usr1"], exit_code=123)}
    ),
}


@pytest.fixture(autouse=True)
def _commands(scripted_engines):
    scripted_engines.script(COMMANDS)


def role(name, tasks, *, gpus=1, command="sleep 300", ports=(), **extra):
    return {
        "name": name,
        "taskNumber": tasks,
        "cpuNumber": 1,
        "memoryMB": 512,
        "gpuNumber": gpus,
        "portList": [{"label": label, "beginAt": 0, "portNumber": 1} for label in ports],
        "command": command,
        **extra,
    }


def config(*roles, name="gang", **extra) -> dict:
    return {"jobName": name, "image": TEST_IMAGE, "taskRoles": list(roles), **extra}


@pytest.fixture
def two_slaves(people):
    """Slaves "mem" and "mem2" of 2 GPUs each, on their own scripted engines; mem2 is
    registered with a routable-looking host (its PAI_HOST_IP)."""
    first = add_slave("mem", f"fake://mem-{uuid.uuid4().hex[:8]}")
    second = add_slave("mem2", f"fake://mem2-{uuid.uuid4().hex[:8]}")
    second.host = "10.0.0.2"
    second.save(update_fields=["host"])
    assert first.online and second.online
    return first, second


def run(people, document) -> list[Job]:
    user, project = people
    # The default outputDir; a scripted slave is "remote": its folders are not made for it.
    output = Path(settings.PORTAL_STORAGE_BASE) / "project" / project.name / "Output"
    (output / document["jobName"]).mkdir(parents=True, exist_ok=True)
    first = job_submit(user=user, project=project, document=copy.deepcopy(document))
    return tasks_of(first)


def tasks_of(job: Job, attempt: int | None = None) -> list[Job]:
    gang = JobGang.objects.get(pk=job.gang_id)
    return list(
        Job.objects.filter(gang=gang, gang_attempt=attempt or gang.attempt)
        .select_related("slave")
        .order_by("task_role", "task_index")
    )


def finish(task: Job, code: int) -> None:
    task.refresh_from_db()
    with engine_for(task.slave) as engine:
        engine.finish(task.container_id, code)
    job_finish_run(job_id=task.pk)


def statuses(tasks) -> list[str]:
    for task in tasks:
        task.refresh_from_db()
    return [t.status for t in tasks]


def test_gang_starts_whole_with_ports_and_peer_variables(people, two_slaves):
    tasks = run(
        people,
        config(
            role("ps", 2, gpus=0, ports=("http",)), role("worker", 2, gpus=2, ports=("http", "ssh"))
        ),
    )
    assert [t.name for t in tasks] == ["gang-ps-0", "gang-ps-1", "gang-worker-0", "gang-worker-1"]
    assert statuses(tasks) == [JobStatus.RUNNING] * 4
    assert {t.slave.name for t in tasks if t.task_role == "worker"} == {"mem", "mem2"}
    by_slave: dict[str, list[int]] = {}
    for task in tasks:
        # Published at the same number inside and outside; what Docker published is recorded.
        mappings = task.request["docker"]["portMappings"]
        assert all(m["containerPort"] == m["hostPort"] for m in mappings)
        assert sorted(p["hostPort"] for p in task.port_mappings) == sorted(
            m["hostPort"] for m in mappings
        )
        by_slave.setdefault(task.slave.name, []).extend(m["hostPort"] for m in mappings)
    for ports in by_slave.values():
        assert len(ports) == len(set(ports))  # never two tasks on one host port
    env = tasks[0].request["docker"]["environment"]
    for task in tasks:
        assert (
            task.request["docker"]["environment"]["PAI_HOST_IP_worker_1"]
            == env["PAI_HOST_IP_worker_1"]
        )
        own = task.request["docker"]["environment"]
        assert own["PAI_CURRENT_TASK_ROLE_NAME"] == task.task_role
        assert own["PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX"] == str(task.task_index)
    worker1 = tasks[3]
    address = "10.0.0.2" if worker1.slave.name == "mem2" else "127.0.0.1"
    assert env["PAI_HOST_IP_worker_1"] == address
    http = worker1.request["docker"]["portMappings"][0]["hostPort"]
    assert env["PAI_PORT_LIST_worker_1_http"] == str(http)
    hosts = env["PAI_TASK_ROLE_worker_HOST_LIST"].split(",")
    assert hosts[1] == f"{address}:{http}"
    assert env["PAI_TASK_ROLE_COUNT"] == "2" and env["PAI_TASK_ROLE_TASK_COUNT_ps"] == "2"


def busy_gpu(people) -> Job:
    """A running one-GPU job: a gang of two 2-GPU tasks then fits the slaves, but not now (one
    that could never fit them is refused at submit: tests/api/test_request_bounds.py)."""
    job = submit(people, job_doc("sleep 300", gpus=1))
    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING
    return job


def test_gang_that_does_not_fit_waits_whole_while_smaller_jobs_run(people, two_slaves):
    busy_gpu(people)
    tasks = run(people, config(role("big", 2, gpus=2)))  # 4 GPUs wanted, 3 free
    assert statuses(tasks) == [JobStatus.QUEUED] * 2
    assert all(t.slave_id is None and not t.gpu_ids for t in tasks)
    small = submit(people, job_doc("sleep 300", gpus=1))
    small.refresh_from_db()
    assert small.status == JobStatus.RUNNING
    tasks[0].refresh_from_db()
    assert tasks[0].queued_explanations[0].startswith("gang of 2 tasks waits whole")


def test_a_failing_task_fails_the_job_and_stops_the_rest(people, two_slaves):
    tasks = run(people, config(role("worker", 3, minFailedTaskCount=1), name="failing"))
    assert statuses(tasks) == [JobStatus.RUNNING] * 3
    finish(tasks[1], 2)
    assert statuses(tasks) == [JobStatus.CANCELLED, JobStatus.FAILED, JobStatus.CANCELLED]
    gang = JobGang.objects.get(pk=tasks[0].gang_id)
    assert gang.status == JobStatus.FAILED
    assert "1 task(s) of role worker failed (minFailedTaskCount 1)" in gang.end_reason
    assert tasks[0].end_reason.startswith("stopped: gang failing attempt 1 FAILED")
    assert [a["status"] for a in gang.attempts] == [JobStatus.FAILED]


def test_null_min_failed_keeps_openpai_meaning(people, two_slaves):
    # Written null (omitted is OpenPAI's default 1: tests/gangs/runtime/test_openpai_defaults.py).
    tasks = run(people, config(role("worker", 2, minFailedTaskCount=None), name="lenient"))
    finish(tasks[0], 1)
    assert statuses(tasks) == [JobStatus.FAILED, JobStatus.RUNNING]
    finish(tasks[1], 0)
    gang = JobGang.objects.get(pk=tasks[0].gang_id)
    assert gang.status == JobStatus.FINISHED  # "always succeeds regardless of any task failure"


def test_min_succeeded_succeeds_the_job_and_stops_the_others(people, two_slaves):
    tasks = run(
        people,
        config(role("ps", 1, gpus=0), role("worker", 2, minSucceededTaskCount=2), name="ok"),
    )
    finish(tasks[1], 0)
    assert JobGang.objects.get(pk=tasks[0].gang_id).status == JobStatus.QUEUED  # one of two so far
    finish(tasks[2], 0)
    assert statuses(tasks) == [JobStatus.CANCELLED, JobStatus.FINISHED, JobStatus.FINISHED]
    assert JobGang.objects.get(pk=tasks[0].gang_id).status == JobStatus.FINISHED


def test_retry_runs_a_new_attempt_and_keeps_the_old_one(people, two_slaves):
    first = run(people, config(role("worker", 2, minFailedTaskCount=1), name="again", retryCount=1))
    finish(first[0], 3)
    gang = JobGang.objects.get(pk=first[0].gang_id)
    assert (gang.status, gang.attempt) == (JobStatus.QUEUED, 2)
    assert statuses(first) == [JobStatus.FAILED, JobStatus.CANCELLED]
    second = tasks_of(first[0], attempt=2)
    assert [t.name for t in second] == ["again-worker-0", "again-worker-1"]
    assert statuses(second) == [JobStatus.RUNNING, JobStatus.RUNNING]
    finish(second[1], 1)
    gang.refresh_from_db()
    assert (gang.status, gang.attempt) == (JobStatus.FAILED, 2)  # retryCount 1: no third attempt
    assert [(a["attempt"], a["status"]) for a in gang.attempts] == [
        (1, JobStatus.FAILED),
        (2, JobStatus.FAILED),
    ]
    assert gang.attempts[0]["tasks"][0]["exitCode"] == 3


def test_cancel_of_one_task_cancels_the_whole_gang_and_never_retries(people, two_slaves):
    user, _ = people
    tasks = run(people, config(role("worker", 2), name="stopme", retryCount=3))
    # A user action goes through the one action registry, which hands a gang task to gangs.
    ACTIONS["cancel"].run(job=tasks[1], user=user)
    assert statuses(tasks) == [JobStatus.CANCELLED, JobStatus.CANCELLED]
    gang = JobGang.objects.get(pk=tasks[0].gang_id)
    assert (gang.status, gang.attempt) == (JobStatus.CANCELLED, 1)
    assert gang.cancelled_by_user and gang.end_reason == f"cancelled by {user.username}"


def test_halt_of_one_task_halts_the_whole_gang(people, two_slaves):
    user, _ = people
    tasks = run(people, config(role("worker", 2, command=HALTABLE), name="haltme"))
    assert statuses(tasks) == [JobStatus.RUNNING, JobStatus.RUNNING]
    job_halt_request(job=tasks[0], user=user)
    assert statuses(tasks) == [JobStatus.HALTED, JobStatus.HALTED]
    assert JobGang.objects.get(pk=tasks[0].gang_id).status == JobStatus.HALTED


def test_hold_and_release_act_on_every_task(people, two_slaves):
    user, _ = people
    busy_gpu(people)
    tasks = run(people, config(role("big", 2, gpus=2), name="held"))
    ACTIONS["hold"].run(job=tasks[1], user=user)
    assert statuses(tasks) == [JobStatus.ONHOLD] * 2
    ACTIONS["release"].run(job=tasks[0], user=user)
    assert statuses(tasks) == [JobStatus.QUEUED] * 2


def test_outcome_policy_table():
    roles = [
        {"name": "ps", "minFailedTaskCount": None, "minSucceededTaskCount": None},
        {"name": "w", "minFailedTaskCount": 2, "minSucceededTaskCount": 1},
    ]
    assert (
        gang_outcome(
            roles, [("ps", JobStatus.RUNNING), ("w", JobStatus.FAILED), ("w", JobStatus.RUNNING)]
        )
        is None
    )
    failed = gang_outcome(
        roles, [("ps", JobStatus.RUNNING), ("w", JobStatus.FAILED), ("w", JobStatus.FAILED)]
    )
    assert failed.status == JobStatus.FAILED
    won = gang_outcome(
        roles, [("ps", JobStatus.RUNNING), ("w", JobStatus.FINISHED), ("w", JobStatus.RUNNING)]
    )
    assert won.status == JobStatus.FINISHED
    # Failures are looked at first.
    both = gang_outcome(
        roles, [("w", JobStatus.FAILED), ("w", JobStatus.FAILED), ("w", JobStatus.FINISHED)]
    )
    assert both.status == JobStatus.FAILED
    assert (
        gang_outcome(roles, [("ps", JobStatus.CANCELLED), ("w", JobStatus.RUNNING)]).status
        == JobStatus.CANCELLED
    )
    null_roles = [{"name": "a", "minFailedTaskCount": None, "minSucceededTaskCount": None}]
    assert gang_outcome(null_roles, [("a", JobStatus.FAILED), ("a", JobStatus.RUNNING)]) is None
    assert (
        gang_outcome(null_roles, [("a", JobStatus.FAILED), ("a", JobStatus.FINISHED)]).status
        == JobStatus.FINISHED
    )


def test_delete_of_a_waiting_gang_revokes_and_hides_every_task(people, two_slaves):
    user, _ = people
    busy_gpu(people)
    tasks = run(people, config(role("big", 2, gpus=2), name="gone"))
    assert statuses(tasks) == [JobStatus.QUEUED] * 2
    ACTIONS["delete"].run(job=tasks[1], user=user)
    assert statuses(tasks) == [JobStatus.DELETED] * 2
    assert JobGang.objects.get(pk=tasks[0].gang_id).status == JobStatus.CANCELLED


def test_reconcile_applies_a_lost_policy_update(people, two_slaves, settings):
    tasks = run(people, config(role("worker", 2, minFailedTaskCount=1), name="lost"))
    settings.PORTAL_TASK_MODE = "record"  # the gang_update fired now is lost
    finish(tasks[0], 4)
    gang = JobGang.objects.get(pk=tasks[0].gang_id)
    assert gang.status == JobStatus.QUEUED and statuses(tasks) == [
        JobStatus.FAILED,
        JobStatus.RUNNING,
    ]
    settings.PORTAL_TASK_MODE = "inline"
    assert gang_recheck_all() == 1
    gang.refresh_from_db()
    assert gang.status == JobStatus.FAILED and statuses(tasks) == [
        JobStatus.FAILED,
        JobStatus.CANCELLED,
    ]


def test_a_task_that_ends_before_its_gang_started_fails_the_gang():
    roles = [{"name": "w", "minFailedTaskCount": None, "minSucceededTaskCount": None}]
    outcome = gang_outcome(roles, [("w", JobStatus.FAILED), ("w", JobStatus.QUEUED)])
    assert outcome.status == JobStatus.FAILED and "before all tasks" in outcome.reason
