"""A one-task OpenPAI config runs as one real job: PAI_* environment, shell command, output
folder in the project's storage (real Docker engine; tasks inline, a real watcher thread)."""

import os
import threading
import time
from pathlib import Path

import pytest

from accounts.models import Membership, Project
from clusters.models import Cluster, Slave
from clusters.services import slave_declare_gpus, slave_probe, slave_register
from jobs.execution.logs import job_log_bytes
from jobs.execution.watcher import SlaveWatch
from jobs.models import Job
from jobs.user_actions.services import job_submit
from tests.integration.docker_support import TEST_IMAGE, docker_url, require_docker

pytestmark = [pytest.mark.docker, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def runtime(settings):
    require_docker(docker_url())
    settings.PORTAL_TASK_MODE = "inline"
    settings.PORTAL_STOP_GRACE_S = 2
    settings.PORTAL_INSTANCE = f"test-pai-{os.getpid()}-{time.monotonic_ns()}"
    return settings


@pytest.fixture
def people(runtime, django_user_model):
    user = django_user_model.objects.create_user("paula", "paula@example.org", "pw")
    project = Project.objects.create(name="pai-e2e", gid=4322)
    Membership.objects.create(user=user, project=project)
    return user, project


@pytest.fixture
def local(people):
    cluster, _ = Cluster.objects.get_or_create(id=1)
    slave = slave_register(name="local", cluster=cluster, docker_url=docker_url(), host="127.0.0.1")
    slave_declare_gpus(slave=slave, gpus=[("Demo GPU", 1024)])
    slave = slave_probe(slave=slave)
    assert slave.online, slave.offline_reason
    stop = threading.Event()
    watch = SlaveWatch(Slave.objects.get(pk=slave.pk), stop)
    watch.start()
    time.sleep(0.3)  # let the event stream open
    yield slave
    stop.set()


def wait_for(job: Job, *states: str, timeout: float = 30) -> Job:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job.refresh_from_db()
        if job.status in states:
            return job
        time.sleep(0.1)
    raise AssertionError(f"job stayed {job.status} (wanted {states}): {job.end_reason}")


def test_single_task_openpai_config_runs_as_one_job(people, local, runtime):
    user, project = people
    config = {
        "jobName": "pai-e2e-run",
        "image": TEST_IMAGE,
        "dataDir": "$PAI_DEFAULT_FS_URI/datasets/small",
        "virtualCluster": "1",
        "taskRoles": [
            {
                "name": "main",
                "taskNumber": 1,
                "cpuNumber": 1,
                "memoryMB": 256,
                "gpuNumber": 1,
                "portList": [{"label": "http", "beginAt": 0, "portNumber": 1}],
                # A shell command, as under OpenPAI: && and redirections work.
                "command": "env | sort && echo done-$epochs > $PAI_OUTPUT_DIR/result.txt",
            }
        ],
        "jobEnvs": {"epochs": 5},
    }
    job = job_submit(user=user, project=project, document=config)
    done = wait_for(job, "FINISHED", "FAILED")
    assert done.status == "FINISHED", done.end_reason
    text = job_log_bytes(done).decode(errors="replace")
    for expected in [
        "PAI_JOB_NAME=pai-e2e-run",
        "PAI_USER_NAME=paula",
        "PAI_DEFAULT_FS_URI=/project",
        "PAI_TASK_ROLE_COUNT=1",
        "PAI_TASK_ROLE_LIST=main",
        "PAI_CURRENT_TASK_ROLE_NAME=main",
        "PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX=0",
        "PAI_RESOURCE_main=1,1,256,64",
        "PAI_DATA_DIR=/project/datasets/small",
        "PAI_OUTPUT_DIR=/project/Output/pai-e2e-run",
        "PAI_PORT_LIST_main_0_http=20000",
        "epochs=5",
        "GPULAB_USERNAME=paula",
    ]:
        assert expected in text, expected
    output = Path(runtime.PORTAL_STORAGE_BASE) / "project" / "pai-e2e" / "Output" / "pai-e2e-run"
    assert (output / "result.txt").read_text().strip() == "done-5"
    assert (
        Path(runtime.PORTAL_STORAGE_BASE) / "project" / "pai-e2e" / "datasets" / "small"
    ).is_dir()
    assert done.openpai_config["jobName"] == "pai-e2e-run"
