"""Never touch what is not yours: two portals, each with two slaves, all on one Docker engine.

Portal A is this test process (its test database, its PORTAL_INSTANCE); portal B is another
process with its own SQLite database and instance id (tests/integration/peer_portal.py). Both
run a sleeping job on each of their slaves, then both run reconcile several times. A's two
slaves share the engine (the slave label keeps them apart) and slave ids may be the same
numbers in both portals (the instance label keeps those apart). Afterwards every
job is still RUNNING and every container still runs; a container carrying A's instance label
but no slave label (made by something else) is left alone too.
"""

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from accounts.models import Membership, Project
from clusters.models import Cluster
from clusters.runtime.engine import DockerEngine
from clusters.runtime.spec import ContainerSpec
from clusters.services import slave_declare_gpus, slave_probe, slave_register
from jobs.execution.container_spec import LABEL_INSTANCE, LABEL_JOB, LABEL_SLAVE
from jobs.execution.reconcile import reconcile_all
from jobs.models import Job
from jobs.user_actions.services import job_submit
from tests.integration.docker_support import TEST_IMAGE, docker_url, require_docker

pytestmark = [pytest.mark.docker, pytest.mark.django_db(transaction=True)]
ROOT = Path(__file__).resolve().parents[2]
CYCLES = 3


def sleeping_job() -> dict:
    return {
        "name": "mine",
        "request": {
            "resources": {"gpus": 1, "cpus": 1, "cpuMemoryGb": 1},
            "docker": {"image": TEST_IMAGE, "command": ["sleep", "300"]},
            "scheduling": {},
        },
    }


def wait_running(jobs: list[Job], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for job in jobs:
            job.refresh_from_db()
        if all(job.status == "RUNNING" for job in jobs):
            return
        time.sleep(0.2)
    raise AssertionError([(j.status, j.end_reason) for j in jobs])


def running_ids(engine: DockerEngine, instance: str) -> set[str]:
    return {c.id for c in engine.list_by_labels({LABEL_INSTANCE: instance}) if c.running}


@pytest.fixture
def engine():
    require_docker(docker_url())
    engine = DockerEngine(docker_url())
    yield engine
    engine.close()


@pytest.fixture
def portals(settings, tmp_path, engine):
    """(instance A, run B): A is this process; run_b(*args) runs an action of portal B."""
    stamp = f"{os.getpid()}-{time.monotonic_ns()}"
    settings.PORTAL_TASK_MODE = "inline"
    settings.PORTAL_STOP_GRACE_S = 1
    settings.PORTAL_INSTANCE = f"two-a-{stamp}"
    instance_b = f"two-b-{stamp}"
    env = {
        **os.environ,
        "PORTAL_VAR_DIR": str(tmp_path / "portal-b"),
        "PORTAL_INSTANCE": instance_b,
        "PORTAL_TASK_MODE": "inline",
        "PYTHONPATH": str(ROOT),
    }
    env.pop("PORTAL_DATABASE_URL", None)

    def run_b(*args: str) -> dict:
        done = subprocess.run(
            [sys.executable, "-m", "tests.integration.peer_portal", *args],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout.strip().splitlines()[-1])

    yield settings.PORTAL_INSTANCE, instance_b, run_b
    for instance in (settings.PORTAL_INSTANCE, instance_b):
        for container in engine.list_by_labels({LABEL_INSTANCE: instance}):
            engine.remove(container.id, force=True)


def test_reconcile_of_two_portals_and_two_slaves_on_one_engine_stops_nothing(
    portals, engine, django_user_model
):
    instance_a, instance_b, run_b = portals
    user = django_user_model.objects.create_user("mine", "mine@example.org", "pw")
    project = Project.objects.create(name="mine", gid=4401)
    Membership.objects.create(user=user, project=project)
    cluster, _ = Cluster.objects.get_or_create(id=1)
    slaves = []
    for name in ("a1", "a2"):
        slave = slave_register(name=name, cluster=cluster, docker_url=docker_url(), host=name)
        slave_declare_gpus(slave=slave, gpus=[("Demo GPU", 1024)])
        slaves.append(slave_probe(slave=slave))
        assert slaves[-1].online, slaves[-1].offline_reason
    mine = [job_submit(user=user, project=project, document=sleeping_job()) for _ in slaves]
    wait_running(mine)
    assert {job.slave_id for job in mine} == {s.pk for s in slaves}  # one on each slave

    theirs = run_b("start")["jobs"]
    assert sorted(slave for _, slave, _ in theirs.values()) == ["b1", "b2"]
    assert all(status == "RUNNING" for status, _, _ in theirs.values()), theirs
    # Something else using A's instance label without a slave label: not A's to remove.
    unlabelled = engine.run(
        ContainerSpec(
            image=TEST_IMAGE,
            command=("sleep", "300"),
            labels={LABEL_INSTANCE: instance_a, LABEL_JOB: str(uuid.uuid4())},
        )
    )
    containers_a = running_ids(engine, instance_a)
    containers_b = running_ids(engine, instance_b)
    assert containers_a == {job.container_id for job in mine} | {unlabelled}
    assert containers_b == {container for _, _, container in theirs.values()}
    for job in mine:  # each container names its slave
        assert engine.inspect(job.container_id).labels[LABEL_SLAVE] == str(job.slave_id)

    for _ in range(CYCLES):
        reconcile_all()
    theirs = run_b("reconcile", str(CYCLES))["jobs"]
    for _ in range(CYCLES):
        reconcile_all()

    for job in mine:
        job.refresh_from_db()
        assert job.status == "RUNNING", (job.status, job.end_reason)
    assert all(status == "RUNNING" for status, _, _ in theirs.values()), theirs
    assert running_ids(engine, instance_a) == containers_a
    assert running_ids(engine, instance_b) == containers_b


def test_containers_started_before_instance_ids_are_adopted_by_job_and_never_removed(
    portals, engine, django_user_model
):
    """An upgrade: a job running in a container labelled the old way (instance "gpuportal", no
    slave label) stays RUNNING through reconcile and is finished when its container exits; an
    old-style container of an unknown job (another old portal's) is left alone."""
    from jobs.execution.container_spec import LEGACY_INSTANCE

    user = django_user_model.objects.create_user("old", "old@example.org", "pw")
    project = Project.objects.create(name="old", gid=4402)
    Membership.objects.create(user=user, project=project)
    cluster, _ = Cluster.objects.get_or_create(id=1)
    slave = slave_register(name="a1", cluster=cluster, docker_url=docker_url(), host="a1")
    slave_declare_gpus(slave=slave, gpus=[("Demo GPU", 1024)])
    slave_probe(slave=slave)
    job = job_submit(user=user, project=project, document=sleeping_job())
    wait_running([job])

    def old_style(job_uuid: str) -> str:
        spec = ContainerSpec(
            image=TEST_IMAGE,
            command=("sleep", "300"),
            labels={LABEL_INSTANCE: LEGACY_INSTANCE, LABEL_JOB: job_uuid},
        )
        return engine.run(spec)

    # As the job would be after the upgrade: its container carries the old labels only.
    engine.remove(job.container_id, force=True)
    adopted = old_style(str(job.uuid))
    Job.objects.filter(pk=job.pk).update(container_id=adopted)
    foreign = old_style(str(uuid.uuid4()))
    try:
        for _ in range(CYCLES):
            reconcile_all()
        job.refresh_from_db()
        assert job.status == "RUNNING", (job.status, job.end_reason)
        assert engine.inspect(adopted).running and engine.inspect(foreign).running

        engine.stop(adopted, timeout_s=1)
        reconcile_all()
        job.refresh_from_db()
        assert job.status in {"FINISHED", "FAILED"} and job.status != "RUNNING"
        assert "disappeared" not in (job.end_reason or "")
        assert engine.inspect(foreign).running
    finally:
        for container in (adopted, foreign):
            try:
                engine.remove(container, force=True)
            except Exception:  # removed by the finish step already
                pass
