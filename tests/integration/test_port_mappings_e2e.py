"""One container port mapped twice keeps both mappings (issue 26 item 2, engine side), on real
Docker: both host ports answer, and the job records both.

GPULab's job request page: "You can specify zero, one or more port mappings"; nothing forbids
two host ports for one container port (duplicate *host* ports are refused at submit:
tests/jobs/spec/test_port_clashes.py). Docker's SDK takes a list of host bindings per container
port; a dict of one binding per port kept only the last mapping.
"""

import copy
import os
import socket
import time

import pytest

from accounts.models import Membership, Project
from clusters.models import Cluster
from clusters.runtime.spec import ContainerSpec, PortMapping, PortPolicy
from clusters.services import slave_declare_gpus, slave_probe, slave_register
from jobs.models import Job
from jobs.user_actions.services import job_cancel, job_submit
from tests.integration.docker_support import TEST_IMAGE, docker_url, require_docker

pytestmark = pytest.mark.docker

HTTPD = ["httpd", "-f", "-p", "8080", "-h", "/www"]  # serves "gpuportal test image"


def free_ports(count: int, low: int = 20000, high: int = 29999) -> list[int]:
    """``count`` host ports nothing listens on, in the range the old default policy allowed."""
    found: list[int] = []
    for port in range(low + int(time.monotonic_ns() % 7000), high):
        try:
            with socket.socket() as probe:
                probe.bind(("0.0.0.0", port))
        except OSError:
            continue
        found.append(port)
        if len(found) == count:
            return found
    raise AssertionError("no free ports")


def http_get(port: int, timeout_s: float = 10.0) -> bytes:
    """GET / on 127.0.0.1:port, retrying until the server inside the container listens."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=2) as conn:
                conn.sendall(b"GET / HTTP/1.0\r\nHost: test\r\n\r\n")
                data = b""
                while chunk := conn.recv(4096):
                    data += chunk
                if data:
                    return data
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"nothing answered on 127.0.0.1:{port}")
        time.sleep(0.1)


def test_the_same_container_port_mapped_twice_keeps_both(docker_engine, test_labels):
    first, second = free_ports(2)
    engine = docker_engine
    policy = engine.port_policy
    engine.port_policy = PortPolicy((1024, 65535), (), ("0.0.0.0", "::", "127.0.0.1"))
    container_id = None
    try:
        container_id = engine.run(
            ContainerSpec(
                image=TEST_IMAGE,
                command=tuple(HTTPD),
                labels=test_labels,
                port_mappings=[
                    PortMapping(8080, first),
                    PortMapping(8080, second, "127.0.0.1"),
                    PortMapping(8080),  # and one Docker picks
                ],
            )
        )
        state = engine.inspect(container_id)
        assert state.running
        mappings = [m for m in state.host_ports if m["containerPort"] == 8080]
        assert len(mappings) == 3, state.host_ports
        fixed = {(m["hostPort"], m["hostIp"]) for m in mappings if m["hostPort"] in (first, second)}
        assert fixed == {(first, "0.0.0.0"), (second, "127.0.0.1")}
        picked = [m["hostPort"] for m in mappings if m["hostPort"] not in (first, second)]
        for port in (first, second, *picked):
            assert b"gpuportal test image" in http_get(port), port
    finally:
        engine.port_policy = policy
        if container_id is not None:
            engine.remove(container_id)


@pytest.mark.django_db(transaction=True)
def test_a_job_records_and_publishes_both_mappings(settings, django_user_model):
    require_docker(docker_url())
    settings.PORTAL_TASK_MODE = "inline"
    settings.PORTAL_STOP_GRACE_S = 1
    settings.PORTAL_INSTANCE = f"test-{os.getpid()}-{time.monotonic_ns()}"
    user = django_user_model.objects.create_user("carol", "carol@example.org", "pw")
    project = Project.objects.create(name="ports", gid=4321)
    Membership.objects.create(user=user, project=project)
    cluster, _ = Cluster.objects.get_or_create(id=1)
    slave = slave_register(name="local", cluster=cluster, docker_url=docker_url(), host="127.0.0.1")
    slave_declare_gpus(slave=slave, gpus=[("Demo GPU", 1024)])
    assert slave_probe(slave=slave).online
    first, second = free_ports(2)
    document = {
        "name": "two-mappings",
        "request": {
            "resources": {"gpus": 0, "cpus": 1, "cpuMemoryGb": 1},
            "docker": {
                "image": TEST_IMAGE,
                "command": HTTPD,
                "portMappings": [
                    {"containerPort": 8080, "hostPort": first},
                    {"containerPort": 8080, "hostPort": second},
                ],
            },
        },
    }
    job = job_submit(user=user, project=project, document=copy.deepcopy(document))
    deadline = time.monotonic() + 30
    while job.status != "RUNNING":
        assert time.monotonic() < deadline and job.status in ("QUEUED", "ASSIGNED", "STARTING"), (
            job.status,
            job.end_reason,
        )
        time.sleep(0.05)
        job.refresh_from_db()
    try:
        recorded = sorted((m["containerPort"], m["hostPort"]) for m in job.port_mappings)
        assert recorded == [(8080, first), (8080, second)]
        for port in (first, second):
            assert b"gpuportal test image" in http_get(port), port
    finally:
        job_cancel(job=job, user=user)
    assert Job.objects.get(pk=job.pk).status in ("CANCELLING", "CANCELLED")
