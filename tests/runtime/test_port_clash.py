"""A host port found taken when a job's container starts (issue 24 item 7), on the scripted
engine: ``host_port_occupy`` plays the other user of the slave's port space (another engine on
the machine, another installation). The portal's ports are replaced (Docker's picks
by starting again, a gang's by re-queueing it whole); a port the user fixed fails the job."""

import uuid

import pytest

from gangs.models import JobGang
from gangs.ports import PORT_REQUEUES_MAX, ports_of_reason, requeue_for_port_clash
from jobs.models import Job
from jobs.states import JobStatus
from tests.gangs.runtime.test_openpai_gang import config, finish, role, run, statuses, tasks_of
from tests.support.runtime import add_slave, job_doc, submit
from tests.support.scripted_engine import Behaviour

pytestmark = pytest.mark.django_db

COMMANDS = {
    "sleep 30": Behaviour(runs_for=30),
    ("/bin/sh", "-c", "sleep 300"): Behaviour(runs_for=300),  # the gangs' tasks
}


@pytest.fixture(autouse=True)
def _commands(scripted_engines):
    scripted_engines.script(COMMANDS)


@pytest.fixture
def two_slaves(people):
    return [add_slave(name, f"fake://{name}-{uuid.uuid4().hex[:8]}") for name in ("m1", "m2")]


def messages(job: Job) -> list[str]:
    return list(job.events.order_by("pk").values_list("message", flat=True))


def test_a_port_the_user_fixed_and_found_taken_fails_the_job_saying_so(
    people, slave, scripted_engines
):
    scripted_engines.host_port_occupy(20080)
    job = submit(
        people,
        job_doc("sleep 30", docker__portMappings=[{"containerPort": 80, "hostPort": 20080}]),
    )
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert job.end_reason.startswith(
        "could not start the container: host port 20080 is taken on slave mem (address already "
        "in use): the job asks for this host port itself (portMappings hostPort)"
    )


def test_a_port_docker_picked_and_found_taken_is_replaced(people, slave, engine):
    """Docker gives up after a few picks of its own that are taken: the start is tried again."""
    engine.fail_next(
        "start",
        message="start: driver failed programming external connectivity on endpoint x: "
        "Bind for 0.0.0.0:32800 failed: port is already allocated",
        status_code=500,
    )
    job = submit(people, job_doc("sleep 30", docker__portMappings=[{"containerPort": 80}]))
    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING, job.end_reason
    (mapping,) = job.port_mappings
    assert mapping["containerPort"] == 80 and mapping["hostPort"] != 32800
    said = messages(job)
    assert (
        "host port 32800 that Docker picked is taken on slave mem (port is already allocated): "
        "starting the container again on other ports" in said
    )
    assert f"started on host port(s) {mapping['hostPort']}, in place of 32800 found taken" in said


def test_docker_s_picks_taken_start_after_start_fail_the_job_at_last(people, slave, engine):
    engine.fail_next(
        "start", message="listen tcp4 0.0.0.0:32800: bind: address already in use", times=4
    )
    job = submit(people, job_doc("sleep 30", docker__portMappings=[{"containerPort": 80}]))
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert "host ports picked by Docker were taken on slave mem at 4 starts in a row" in (
        job.end_reason
    )


def test_a_gang_port_found_taken_requeues_the_gang_whole_on_other_ports(
    people, two_slaves, settings, scripted_engines
):
    """The portal chooses a gang's ports from the top of the site's range: the first one is
    taken on the machine, so the task cannot start; its peers know that number, so the gang
    goes back to the queue whole, and its next attempt's ports avoid the taken one."""
    settings.PORTAL_AUTO_HOST_PORT_RANGE = "20000-20003"
    scripted_engines.host_port_occupy(20003)
    second = run(people, config(role("worker", 2, ports=("http",)), name="clash"))
    first = tasks_of(second[0], attempt=1)
    gang = JobGang.objects.get(pk=first[0].gang_id)
    assert (gang.status, gang.attempt, gang.retry_count) == (JobStatus.QUEUED, 2, 0)
    assert statuses(first) == [JobStatus.FAILED, JobStatus.CANCELLED]
    assert first[0].end_reason.startswith(
        "could not start the container: host port 20003 chosen by the portal for this gang: is "
        "taken on slave "
    )
    (record,) = gang.attempts
    assert record["portsTaken"] == [20003] and "not counted as a retry" in record["reason"]
    assert statuses(second) == [JobStatus.RUNNING, JobStatus.RUNNING]
    ports = sorted(p["hostPort"] for t in second for p in t.port_mappings)
    assert ports == [20000, 20001]
    env = second[0].request["docker"]["environment"]
    assert {env["PAI_PORT_LIST_worker_0_http"], env["PAI_PORT_LIST_worker_1_http"]} == {
        "20000",
        "20001",
    }
    assert any(
        m.startswith("attempt 2 of gang clash (re-queued whole: host port(s) 20003 found taken")
        for m in messages(second[0])
    )


def test_a_requeue_for_a_taken_port_is_not_counted_as_a_retry(
    people, two_slaves, settings, scripted_engines
):
    settings.PORTAL_AUTO_HOST_PORT_RANGE = "20000-20003"
    scripted_engines.host_port_occupy(20003)
    second = run(
        people,
        config(
            role("worker", 2, ports=("http",), minFailedTaskCount=1), name="counted", retryCount=1
        ),
    )
    first = tasks_of(second[0], attempt=1)
    assert first[0].status == JobStatus.FAILED and second[0].gang_attempt == 2
    assert statuses(second) == [JobStatus.RUNNING, JobStatus.RUNNING]
    finish(second[0], 1)  # a failure of its own: retryCount 1 allows one retry still
    gang = JobGang.objects.get(pk=first[0].gang_id)
    assert (gang.status, gang.attempt) == (JobStatus.QUEUED, 3)
    third = tasks_of(first[0])
    assert any(m.startswith("attempt 3 of gang counted (retry 1 of 1)") for m in messages(third[0]))
    finish(third[1], 1)
    gang.refresh_from_db()
    assert (gang.status, gang.attempt) == (JobStatus.FAILED, 3)


def test_a_gang_port_the_user_fixed_and_found_taken_fails_the_task(
    people, two_slaves, scripted_engines
):
    scripted_engines.host_port_occupy(21000)
    fixed = {"label": "http", "beginAt": 21000, "portNumber": 1}
    first = run(
        people,
        config(role("worker", 2, minFailedTaskCount=1, portList=[fixed]), name="userport"),
    )
    failed = [t for t in first if t.status == JobStatus.FAILED]
    assert failed and all(
        "host port 21000 is taken on slave" in t.end_reason
        and "asks for this host port" in t.end_reason
        for t in failed
    )
    gang = JobGang.objects.get(pk=first[0].gang_id)
    assert gang.status == JobStatus.FAILED and "portsTaken" not in gang.attempts[0]


def test_requeues_for_taken_ports_stop_at_the_limit(people, two_slaves, settings, scripted_engines):
    settings.PORTAL_AUTO_HOST_PORT_RANGE = "20000-20003"
    scripted_engines.host_port_occupy(20003)
    second = run(people, config(role("worker", 2, ports=("http",)), name="limit"))
    first = tasks_of(second[0], attempt=1)
    gang = JobGang.objects.get(pk=first[0].gang_id)
    gang.attempts = [{**gang.attempts[0], "attempt": n} for n in range(PORT_REQUEUES_MAX)]
    assert requeue_for_port_clash(gang, first) is None
    gang.attempts = gang.attempts[:1]
    assert requeue_for_port_clash(gang, first).ports == {20003}


def test_the_reason_names_the_ports_it_is_read_back_from():
    assert ports_of_reason(
        "could not start the container: host ports 20001, 20002 chosen by the portal for this "
        "gang: one of them is taken on slave s (taken)"
    ) == {20001, 20002}
    assert ports_of_reason("exit code 1") == set() and ports_of_reason("") == set()
