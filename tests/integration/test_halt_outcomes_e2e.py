"""Halt outcomes to the letter of GPULab's scheduling page (issue 26 item 3), on real Docker
with a real watcher following the engine's events, as in production.

"If the job does not stop on time, or stops with another exit code, the job is set to the
FAILED state. If the job does correctly stop, GPULab will set the job to the HALTED state."
(gpulab-scheduling.txt, "GPULab HALT procedure"; the whole table is tests/jobs/test_halt_outcomes.py.)
A job whose own end comes before the signal is sent keeps its own exit code.
"""

import copy
import os
import threading
import time

import pytest

from accounts.models import Membership, Project
from clusters.models import Cluster, Slave
from clusters.services import slave_declare_gpus, slave_probe, slave_register
from jobs.execution.logs import job_log_bytes
from jobs.execution.runs import job_finish_run, job_halt_run
from jobs.execution.watcher import SlaveWatch
from jobs.models import Job
from jobs.user_actions.services import job_halt_request, job_submit
from tests.integration.docker_support import TEST_IMAGE, docker_url, require_docker

pytestmark = [pytest.mark.docker, pytest.mark.django_db(transaction=True)]
ENDS = ("FINISHED", "FAILED", "HALTED", "CANCELLED")


@pytest.fixture
def runtime(settings):
    require_docker(docker_url())
    settings.PORTAL_TASK_MODE = "inline"
    settings.PORTAL_HALT_GRACE_S = 3
    settings.PORTAL_STOP_GRACE_S = 2
    settings.PORTAL_INSTANCE = f"test-{os.getpid()}-{time.monotonic_ns()}"
    return settings


@pytest.fixture
def people(runtime, django_user_model):
    user = django_user_model.objects.create_user("carol", "carol@example.org", "pw")
    project = Project.objects.create(name="halts", gid=4321)
    Membership.objects.create(user=user, project=project)
    return user, project


@pytest.fixture
def local(people):
    cluster, _ = Cluster.objects.get_or_create(id=1)
    slave = slave_register(name="local", cluster=cluster, docker_url=docker_url(), host="127.0.0.1")
    slave_declare_gpus(slave=slave, gpus=[("Demo GPU", 1024)] * 2)
    slave = slave_probe(slave=slave)
    assert slave.online, slave.offline_reason
    return slave


@pytest.fixture
def watcher(local):
    stop = threading.Event()
    for slave in Slave.objects.all():
        SlaveWatch(slave, stop).start()
    time.sleep(0.3)  # let the event streams open
    yield
    stop.set()


def submit(people, command, **scheduling) -> Job:
    user, project = people
    document = {
        "name": "halt",
        "request": {
            "resources": {"gpus": 1, "cpus": 1, "cpuMemoryGb": 1},
            "docker": {"image": TEST_IMAGE, "command": command},
            "scheduling": scheduling,
        },
    }
    return job_submit(user=user, project=project, document=copy.deepcopy(document))


def wait_for(job: Job, *states: str, timeout: float = 30) -> Job:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job.refresh_from_db()
        if job.status in states:
            return job
        time.sleep(0.05)
    raise AssertionError(f"job stayed {job.status} (wanted {states}): {job.end_reason}")


def halted_with(people, trap: str, **scheduling) -> Job:
    """A running job that reacts to SIGUSR1 with ``trap``, halted by its user."""
    command = (
        f"sh -c 'trap \"echo saw-usr1; {trap}\" USR1; echo ready; while :; do sleep 0.1; done'"
    )
    running = wait_for(submit(people, command, **scheduling), "RUNNING")
    time.sleep(0.3)  # the trap is set
    job_halt_request(job=running, user=people[0])
    return wait_for(running, *ENDS)


@pytest.mark.parametrize(
    ("trap", "status", "code", "reason"),
    [
        ("exit 123", "HALTED", 123, "halted"),
        # The case: a job trapping SIGUSR1 and exiting 0 ended FINISHED.
        (
            "exit 0",
            "FAILED",
            0,
            "halt procedure not obeyed: exit code 0 after SIGUSR1 (only 123 means halted)",
        ),
        (
            "exit 1",
            "FAILED",
            1,
            "halt procedure not obeyed: exit code 1 after SIGUSR1 (only 123 means halted)",
        ),
        (
            "echo ignored",
            "FAILED",
            137,
            "halt procedure not obeyed: no exit with code 123 within 3 s",
        ),
    ],
)
def test_after_sigusr1_only_123_is_halted(people, watcher, trap, status, code, reason):
    done = halted_with(people, trap)
    assert (done.status, done.exit_code, done.end_reason) == (status, code, reason)
    assert "saw-usr1" in job_log_bytes(done).decode()
    messages = list(done.events.values_list("message", flat=True))
    assert "halt: sending SIGUSR1" in messages
    assert "halt: SIGUSR1 sent: exit with code 123 within 3 s" in messages


def test_a_halt_without_signal_is_halted_whatever_the_exit_code(people, watcher):
    done = halted_with(people, "exit 0", allowHaltWithoutSignal=True)
    assert done.status == "HALTED" and done.exit_code == 137  # stopped at once, no signal
    assert "saw-usr1" not in job_log_bytes(done).decode()


@pytest.mark.parametrize(("code", "status"), [(0, "FINISHED"), (1, "FAILED"), (123, "FAILED")])
def test_an_end_before_the_halt_task_ran_keeps_its_exit_code(
    people, watcher, runtime, code, status
):
    """MUSTHALT when the container stops: the halt's worker has not run. Exit 123 here used to
    be judged HALTED, a move from MUSTHALT the state machine forbids (the finish failed)."""
    running = wait_for(submit(people, f"sh -c 'sleep 1.5; exit {code}'"), "RUNNING")
    runtime.PORTAL_TASK_MODE = "record"  # the halt task stays in the queue
    job_halt_request(job=running, user=people[0])
    runtime.PORTAL_TASK_MODE = "inline"
    assert Job.objects.get(pk=running.pk).status == "MUSTHALT"
    done = wait_for(running, *ENDS)  # the watcher finishes it
    assert (done.status, done.exit_code) == (status, code)
    assert "not obeyed" not in done.end_reason


@pytest.mark.parametrize(("code", "status"), [(0, "FINISHED"), (123, "FAILED")])
def test_an_end_before_the_signal_was_sent_keeps_its_exit_code(
    people, local, runtime, code, status
):
    """HALTING, the signal not delivered: the container had stopped (no watcher here, so the
    halt's own worker is the one that finds the end)."""
    running = wait_for(submit(people, f"sh -c 'sleep 1; exit {code}'"), "RUNNING")
    runtime.PORTAL_TASK_MODE = "record"
    job_halt_request(job=running, user=people[0])
    runtime.PORTAL_TASK_MODE = "inline"
    time.sleep(2.5)  # it has exited on its own; nobody finished it
    job_halt_run(job_id=running.pk)
    done = wait_for(running, *ENDS, timeout=5)
    assert (done.status, done.exit_code) == (status, code)
    messages = list(done.events.values_list("message", flat=True))
    assert "halt: SIGUSR1 not sent: the job had already ended" in messages
    job_finish_run(job_id=running.pk)  # once more: recorded once
    assert Job.objects.get(pk=running.pk).status == status
