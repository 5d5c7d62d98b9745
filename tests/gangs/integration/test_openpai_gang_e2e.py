"""The seed's distributed OpenPAI example on two real Docker engines (docs/openpai.md).

OpenPAI's TensorFlow example (two ps_server tasks, two worker tasks, ports http and ssh,
minSucceededTaskCount 2 on the workers) with busybox commands in place of TensorFlow and its
resources scaled to the test engines (2 CPUs each): each parameter server listens on its http
port with ``nc -l``; each worker reads PAI_TASK_ROLE_ps_server_HOST_LIST and sends a line to
every parameter server over TCP. The workers land on different engines (4 GPUs each, one
engine's worth), so the traffic crosses engines through the PAI variables. The job succeeds by
minSucceededTaskCount, and the parameter servers, which never end by themselves, are stopped.

Slaves: "local" on unix:///var/run/docker.sock and "slave2" on the first extra engine, each
registered with its engine's host address (the gateway of the engine's default bridge,
172.17.0.1 / 10.222.2.1 with scripts/docker-engines.sh): the address containers of the other
engine reach its published ports at, which is what PAI_HOST_IP_* must be.
"""

import json
import os
import threading
import time
import uuid
from pathlib import Path

import pytest

from accounts.models import Membership, Project
from clusters.models import Cluster, Slave
from clusters.runtime.engine import DockerEngine
from clusters.runtime.errors import RuntimeFailure
from clusters.runtime.spec import ContainerSpec
from clusters.services import slave_declare_gpus, slave_probe, slave_register
from gangs.models import JobGang
from jobs.execution.logs import job_log_bytes
from jobs.execution.watcher import SlaveWatch
from jobs.models import Job
from jobs.user_actions.services import job_submit
from tests.gangs import OPENPAI_SEED
from tests.integration.docker_support import (
    TEST_IMAGE,
    docker_url,
    require_docker,
    require_extra_engine,
)

pytestmark = [pytest.mark.docker, pytest.mark.django_db(transaction=True)]

SEED = OPENPAI_SEED

# The parameter server: listen on its http port, print what workers send and answer "ack",
# forever. The answer matters: Docker's userland proxy accepts a connection to a published
# port even before the container listens, so only an answer proves the line arrived.
PS_COMMAND = (
    "eval PORT=\\$PAI_PORT_LIST_ps_server_${PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX}_http; "
    'echo "ps $PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX listening on $PORT"; '
    "while true; do echo ack | nc -l -p $PORT; done"
)
# The worker: send one line to every parameter server of the host list, retrying while they
# start; check the code folder is read-only; exit 0.
WORKER_COMMAND = (
    "i=$PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX; "
    "for hp in $(echo $PAI_TASK_ROLE_ps_server_HOST_LIST | tr , ' '); do "
    "h=${hp%:*}; p=${hp#*:}; n=0; "
    'until echo "worker-$i batch=$batch_size model=$job_model" | nc -w 3 $h $p | grep -q ack; do '
    "n=$((n+1)); [ $n -gt 60 ] && echo cannot-reach-$hp && exit 1; sleep 1; done; "
    'echo "worker-$i reached $hp"; done; '
    "touch $PAI_CODE_DIR/x 2>/dev/null && echo code-writable || echo code-read-only; "
    "echo shm-kb=$(df -k /dev/shm | awk 'NR==2 {print $2}'); "
    'echo "$PAI_TASK_ROLE_ps_server_HOST_LIST" > $PAI_OUTPUT_DIR/worker-$i.txt'
)


def seed_example() -> dict:
    lines = SEED.read_text().splitlines()
    return json.loads("\n".join(line for line in lines if not line.strip().startswith("//")))


def engine_host_address(url: str) -> str:
    """The engine's host address as its containers see it: their default route's gateway."""
    with DockerEngine(url) as engine:
        container = engine.run(
            ContainerSpec(
                image=TEST_IMAGE,
                command=("sh", "-c", "ip route | awk '/default/ {print $3}'"),
                labels={"gpuportal.test": uuid.uuid4().hex},
            )
        )
        try:
            engine.wait(container, timeout_s=30)
            return engine.logs(container).decode().strip()
        finally:
            engine.remove(container)


@pytest.fixture
def runtime(settings):
    require_docker(docker_url())
    settings.PORTAL_TASK_MODE = "inline"
    settings.PORTAL_STOP_GRACE_S = 1
    settings.PORTAL_INSTANCE = f"test-paigang-{os.getpid()}-{time.monotonic_ns()}"
    return settings


@pytest.fixture
def people(runtime, django_user_model):
    user = django_user_model.objects.create_user("paige", "paige@example.org", "pw")
    project = Project.objects.create(name="pai-gang", gid=4323)
    Membership.objects.create(user=user, project=project)
    return user, project


@pytest.fixture
def two_engines(people):
    extra = require_extra_engine(0)
    cluster, _ = Cluster.objects.get_or_create(id=1, defaults={"comment": "your_virtual_cluster"})
    Cluster.objects.filter(pk=cluster.pk).update(comment="your_virtual_cluster")
    stop = threading.Event()
    slaves = []
    for name, url in (("local", docker_url()), ("slave2", extra)):
        slave = slave_register(
            name=name, cluster=cluster, docker_url=url, host=engine_host_address(url)
        )
        slave_declare_gpus(slave=slave, gpus=[("Demo GPU", 1024)] * 4)
        slave = slave_probe(slave=slave)
        assert slave.online, slave.offline_reason
        SlaveWatch(Slave.objects.get(pk=slave.pk), stop).start()
        slaves.append(slave)
    time.sleep(0.3)  # let the event streams open
    yield slaves
    stop.set()
    deadline = time.monotonic() + 30
    for slave in slaves:  # nothing of this test may stay behind
        with DockerEngine(slave.docker_url) as engine:
            labels = {"gpuportal.instance": runtime_instance()}
            while left := engine.list_by_labels(labels):
                assert time.monotonic() < deadline, f"containers left on {slave.name}: {left}"
                for state in left:
                    try:
                        engine.remove(state.id)
                    except RuntimeFailure:
                        pass  # the portal is removing it right now
                time.sleep(0.5)


def runtime_instance() -> str:
    from django.conf import settings

    return settings.PORTAL_INSTANCE


def wait_gang(gang: JobGang, timeout: float = 120) -> JobGang:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        gang.refresh_from_db()
        tasks = Job.objects.filter(gang=gang)
        if gang.status != "QUEUED" and all(
            t.status in ("FINISHED", "FAILED", "CANCELLED", "HALTED") for t in tasks
        ):
            return gang
        time.sleep(0.2)
    states = [
        (t.name, t.status, t.end_reason, t.queued_explanations)
        for t in Job.objects.filter(gang=gang)
    ]
    raise AssertionError(f"gang stayed {gang.status}: {states}")


def test_seed_distributed_example_runs_across_two_engines(people, two_engines, runtime):
    user, project = people
    config = seed_example()
    config["image"] = TEST_IMAGE
    for role in config["taskRoles"]:
        # Scaled to the test engines: 2 CPUs and one host's memory each.
        role["cpuNumber"] = 1
        role["memoryMB"] = 512 if role["name"] == "ps_server" else 1024
        role["command"] = PS_COMMAND if role["name"] == "ps_server" else WORKER_COMMAND
    config["taskRoles"][1]["shmMB"] = 128  # the workers' shared memory: --shm-size
    first = job_submit(user=user, project=project, document=config)
    gang = wait_gang(JobGang.objects.get(pk=first.gang_id))
    tasks = {t.name: t for t in Job.objects.filter(gang=gang).select_related("slave")}
    prefix = "tensorflow-distributed-jobguid-"
    assert gang.status == "FINISHED", (gang.end_reason, {n: t.end_reason for n, t in tasks.items()})
    assert "2 task(s) of role worker succeeded (minSucceededTaskCount 2)" in gang.end_reason
    workers = [tasks[prefix + "worker-0"], tasks[prefix + "worker-1"]]
    servers = [tasks[prefix + "ps_server-0"], tasks[prefix + "ps_server-1"]]
    assert [w.status for w in workers] == ["FINISHED", "FINISHED"]
    assert [s.status for s in servers] == ["CANCELLED", "CANCELLED"]  # stopped by the policy
    assert {w.slave.name for w in workers} == {"local", "slave2"}  # 4 GPUs each: one per engine
    addresses = {s.name: s.host for s in two_engines}
    ps_log = {s.task_index: job_log_bytes(s).decode(errors="replace") for s in servers}
    for worker in workers:
        text = job_log_bytes(worker).decode(errors="replace")
        env = worker.request["docker"]["environment"]
        hosts = env["PAI_TASK_ROLE_ps_server_HOST_LIST"].split(",")
        for server, hp in zip(servers, hosts, strict=True):
            port = env[f"PAI_PORT_LIST_ps_server_{server.task_index}_http"]
            assert hp == f"{addresses[server.slave.name]}:{port}"
            assert env[f"PAI_HOST_IP_ps_server_{server.task_index}"] == addresses[server.slave.name]
            assert f"worker-{worker.task_index} reached {hp}" in text
        assert "code-read-only" in text
        assert "shm-kb=131072" in text
        for index, log in ps_log.items():
            assert f"worker-{worker.task_index} batch=32 model=resnet20" in log, (index, log)
    # Every port published at the same number inside and outside, none shared in the gang.
    ports = [m["hostPort"] for t in tasks.values() for m in t.request["docker"]["portMappings"]]
    assert len(ports) == 8 and len(set(ports)) == 8
    for task in tasks.values():
        assert all(
            m["containerPort"] == m["hostPort"] for m in task.request["docker"]["portMappings"]
        )
    output = (
        Path(runtime.PORTAL_STORAGE_BASE)
        / "project"
        / project.name
        / "path"
        / "tensorflow-distributed-jobguid"
        / "output"
    )
    assert sorted(p.name for p in output.iterdir()) == ["worker-0.txt", "worker-1.txt"]
    assert [a["status"] for a in gang.attempts] == ["FINISHED"]
