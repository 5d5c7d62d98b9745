"""A host port found taken when a job starts, on a real Docker engine (issue 24 item 7).

The port is held by this test, a socket listening on 0.0.0.0 (as another engine's container or
another installation on the slave's machine would hold it): Docker's userland proxy cannot bind
it and the start fails with "address already in use". A gang whose port the portal chose goes
back to the queue whole and runs on other ports; a port the user fixed fails the job, saying so.
"""

import copy
import os
import random
import socket
import time
from contextlib import contextmanager

import pytest

from accounts.models import Membership, Project
from clusters.models import Cluster
from clusters.runtime.engine import DockerEngine
from clusters.runtime.errors import RuntimeFailure
from clusters.services import slave_declare_gpus, slave_probe, slave_register
from gangs.models import JobGang
from jobs.models import Job
from jobs.user_actions.services import job_cancel, job_submit
from tests.integration.docker_support import TEST_IMAGE, docker_url, require_docker

pytestmark = [pytest.mark.docker, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def runtime(settings):
    require_docker(docker_url())
    settings.PORTAL_TASK_MODE = "inline"
    settings.PORTAL_STOP_GRACE_S = 1
    settings.PORTAL_INSTANCE = f"test-portclash-{os.getpid()}-{time.monotonic_ns()}"
    yield settings
    # Nothing of this test may stay behind (a peer stopped while it was starting included).
    with DockerEngine(docker_url()) as engine:
        for state in engine.list_by_labels({"gpuportal.instance": settings.PORTAL_INSTANCE}):
            try:
                engine.remove(state.id)
            except RuntimeFailure:
                pass


@pytest.fixture
def people(runtime, django_user_model):
    user = django_user_model.objects.create_user("porter", "porter@example.org", "pw")
    project = Project.objects.create(name="port-clash", gid=4325)
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


def free_ports(count: int) -> int:
    """The top of ``count`` consecutive ports free on 0.0.0.0 (in the default site range)."""
    for _ in range(200):
        top = random.randint(21000 + count, 29999)
        try:
            for port in range(top - count + 1, top + 1):
                with socket.socket() as probe:
                    probe.bind(("0.0.0.0", port))
        except OSError:
            continue
        return top
    raise AssertionError("no free ports")


@contextmanager
def held(port: int):
    """``port`` taken on the host outside Docker: a socket listening on 0.0.0.0."""
    with socket.socket() as sock:
        sock.bind(("0.0.0.0", port))
        sock.listen()
        yield


def wait(predicate, what: str, timeout: float = 90):
    deadline = time.monotonic() + timeout
    while not (found := predicate()):
        assert time.monotonic() < deadline, f"{what}: timed out"
        time.sleep(0.2)
    return found


def messages(job: Job) -> list[str]:
    return list(job.events.order_by("pk").values_list("message", flat=True))


def test_a_port_the_portal_chose_and_found_taken_is_replaced(people, local, settings):
    """The range the portal picks ports from narrowed to four ports: the portal gives the
    gang's two tasks the top two, the top one is taken; the gang goes back to the queue whole
    and its next attempt runs on the two others."""
    user, project = people
    top = free_ports(4)
    settings.PORTAL_AUTO_HOST_PORT_RANGE = f"{top - 3}-{top}"
    config = {
        "jobName": "clash",
        "image": TEST_IMAGE,
        "taskRoles": [
            {
                "name": "worker",
                "taskNumber": 2,
                "cpuNumber": 1,
                "memoryMB": 256,
                "gpuNumber": 1,
                "portList": [{"label": "http", "beginAt": 0, "portNumber": 1}],
                "command": "sleep 300",
            }
        ],
    }
    with held(top):
        first = job_submit(user=user, project=project, document=copy.deepcopy(config))
        gang = JobGang.objects.get(pk=first.gang_id)

        def running():
            gang.refresh_from_db()
            tasks = list(Job.objects.filter(gang=gang, gang_attempt=gang.attempt))
            return gang.attempt > 1 and all(t.status == "RUNNING" for t in tasks) and tasks

        second = wait(running, "the gang's next attempt running")
    (clashed,) = Job.objects.filter(gang=gang, gang_attempt=1, status="FAILED")
    assert (
        f"host port {top} chosen by the portal for this gang: is taken on slave local "
        "(address already in use); the gang goes back to the queue whole" in clashed.end_reason
    )
    assert gang.attempts[0]["portsTaken"] == [top]
    published = sorted(p["hostPort"] for t in second for p in t.port_mappings)
    assert published == [top - 3, top - 2]
    assert any(
        m.startswith(f"attempt 2 of gang clash (re-queued whole: host port(s) {top} found taken")
        for m in messages(second[0])
    )
    job_cancel(job=second[0], user=user)
    wait(lambda: gang.refresh_from_db() or gang.status == "CANCELLED", "the gang cancelled")


def test_a_port_the_user_fixed_and_found_taken_fails_the_job(people, local):
    user, project = people
    port = free_ports(1)
    document = {
        "name": "fixed",
        "request": {
            "resources": {"gpus": 1, "cpus": 1, "cpuMemoryGb": 1},
            "docker": {
                "image": TEST_IMAGE,
                "command": "sleep 300",
                "portMappings": [{"containerPort": 80, "hostPort": port}],
            },
            "scheduling": {},
        },
    }
    with held(port):
        job = job_submit(user=user, project=project, document=document)
        job = wait(
            lambda: job.refresh_from_db() or (job.status in ("FAILED", "RUNNING") and job),
            "the job ended its start",
        )
    assert job.status == "FAILED"
    assert job.end_reason.startswith(
        f"could not start the container: host port {port} is taken on slave local (address "
        "already in use): the job asks for this host port itself (portMappings hostPort)"
    )
