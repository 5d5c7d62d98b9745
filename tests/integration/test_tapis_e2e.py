"""A Tapis app end to end on real Docker: an app with required and optional arguments and a
file input from project storage runs; the input is staged into /job/inputs before the start
(Docker's archive upload), the macros land in the command, the job goes through Tapis' stages,
and its stdout/stderr are archived as tapisjob.out beside the files it wrote, listed and
downloaded over the Tapis API."""

import os
import threading
import time
from pathlib import Path

import pytest
from rest_framework.test import APIClient

from accounts.models import Membership, Project
from accounts.tokens import api_token_rotate
from clusters.models import Cluster, Slave
from clusters.services import engine_for, slave_declare_gpus, slave_probe, slave_register
from jobs.execution.outputs import job_archive_outputs_dir
from jobs.execution.watcher import SlaveWatch
from tapis.services import app_create
from tapis.submit import tapis_job_submit
from tests.integration.docker_support import TEST_IMAGE, docker_url, require_docker

pytestmark = [pytest.mark.docker, pytest.mark.django_db(transaction=True)]

SCRIPT = (
    'sh -c \'echo "job=$RUN_ID mode=$MODE args=$*"; cat /job/inputs/in/data.txt; '
    "ls /job/inputs/in; echo oops >&2; echo 42 > $JOB_OUTPUT_DIR/answer.txt; "
    "mkdir $JOB_OUTPUT_DIR/more; echo x > $JOB_OUTPUT_DIR/more/x.txt' tapis"
)
APP = {
    "id": "e2e-app",
    "version": "1.0",
    "containerImage": TEST_IMAGE,
    "command": SCRIPT,
    "jobAttributes": {
        "parameterSet": {
            "appArgs": [
                {"name": "size", "inputMode": "REQUIRED", "arg": ""},
                {"name": "tag", "inputMode": "INCLUDE_BY_DEFAULT", "arg": "--tag ${JobName}"},
                {"name": "debug", "inputMode": "INCLUDE_ON_DEMAND", "arg": "--debug"},
            ],
            "envVariables": [
                {"key": "RUN_ID", "value": "${JobUUID}"},
                {"key": "MODE", "value": "slow"},
            ],
        },
        "fileInputs": [{"name": "data", "inputMode": "REQUIRED", "targetPath": "in/data.txt"}],
        "resources": {"gpus": 0, "cpus": 1, "cpuMemoryGb": 1},
    },
}


@pytest.fixture
def runtime(settings, tmp_path):
    require_docker(docker_url())
    settings.PORTAL_TASK_MODE = "inline"
    settings.PORTAL_INSTANCE = f"test-tapis-{os.getpid()}-{time.monotonic_ns()}"
    settings.PORTAL_JOB_ARCHIVE_DIR = tmp_path / "archive"
    yield settings
    slave = Slave.objects.filter(name="local").first()
    if slave is not None:  # whatever this test left on the engine
        with engine_for(slave) as engine:
            for state in engine.list_by_labels({"gpuportal.instance": settings.PORTAL_INSTANCE}):
                engine.remove(state.id)


@pytest.fixture
def people(runtime, django_user_model):
    user = django_user_model.objects.create_user("carol", "carol@example.org", "pw")
    project = Project.objects.create(name="e2e", gid=4321)
    Membership.objects.create(user=user, project=project)
    folder = Path(runtime.PORTAL_STORAGE_BASE) / "project" / "e2e" / "inputs"
    folder.mkdir(parents=True)
    (folder / "data.txt").write_text("the input file\n")
    return user, project


@pytest.fixture
def local(people):
    cluster, _ = Cluster.objects.get_or_create(id=1)
    slave = slave_register(name="local", cluster=cluster, docker_url=docker_url(), host="127.0.0.1")
    slave_declare_gpus(slave=slave, gpus=[("Demo GPU", 1024)])
    slave = slave_probe(slave=slave)
    assert slave.online, slave.offline_reason
    stop = threading.Event()
    SlaveWatch(slave, stop).start()
    time.sleep(0.3)  # let the event stream open
    yield slave
    stop.set()


def test_app_job_runs_through_the_tapis_stages(people, local):
    user, _ = people
    app_create(user=user, definition=APP)
    job = tapis_job_submit(
        user=user,
        request={
            "name": "e2e-job",
            "appId": "e2e-app",
            "appVersion": "1.0",
            "parameterSet": {
                "appArgs": [
                    {"arg": "--first", "meta": {"name": "own", "required": True}},
                    {"name": "size", "arg": "--size 3"},
                ],
                "envVariables": [{"key": "MODE", "value": "fast"}],
            },
            "fileInputs": [{"name": "data", "sourceUrl": "/project/inputs/data.txt"}],
        },
    )
    deadline = time.monotonic() + 60
    while job.status not in ("FINISHED", "FAILED", "CANCELLED") and time.monotonic() < deadline:
        time.sleep(0.2)
        job.refresh_from_db()
    assert job.status == "FINISHED", job.end_reason

    stages = list(job.events.exclude(stage="").values_list("stage", flat=True))
    assert stages == [
        "PENDING",
        "PROCESSING_INPUTS",
        "STAGING_INPUTS",
        "STAGING_JOB",
        "SUBMITTING_JOB",
        "QUEUED",
        "RUNNING",
        "ARCHIVING",
    ]
    out = (job_archive_outputs_dir(job) / "tapisjob.out").read_text()
    # The macros landed in the environment and the arguments; the request's own argument
    # comes first, the app's are appended; the staged input was there before the start.
    assert f"job={job.uuid} mode=fast args=--first --size 3 --tag e2e-job\n" in out
    assert "the input file\n" in out and "data.txt\n" in out and "oops\n" in out

    _, key = api_token_rotate(user=user)
    client = APIClient()
    client.credentials(HTTP_X_TAPIS_TOKEN=key)
    status = client.get(f"/api/tapis/v3/jobs/{job.uuid}/status").json()["result"]
    assert status == {"status": "FINISHED", "condition": "NORMAL_COMPLETION"}
    history = client.get(f"/api/tapis/v3/jobs/{job.uuid}/history").json()["result"]
    details = [e["eventDetail"] for e in history if e["event"] == "JOB_NEW_STATUS"]
    assert details.index("STAGING_INPUTS") < details.index("RUNNING") < details.index("FINISHED")
    # The seed's download: tapisjob.out, over the Tapis API; the job's own outputs beside it.
    listed = client.get(f"/api/tapis/v3/jobs/{job.uuid}/output/list/").json()["result"]
    assert sorted((f["path"], f["type"]) for f in listed) == [
        ("answer.txt", "file"),
        ("more", "dir"),
        ("tapisjob.out", "file"),
    ]
    download = client.get(f"/api/tapis/v3/jobs/{job.uuid}/output/download/tapisjob.out")
    assert b"".join(download.streaming_content).decode() == out
    answer = client.get(f"/api/tapis/v3/jobs/{job.uuid}/output/download/answer.txt")
    assert b"".join(answer.streaming_content) == b"42\n"
    with engine_for(local) as engine:
        assert not engine.find_by_label("gpuportal.job", str(job.uuid))  # removed after archiving
