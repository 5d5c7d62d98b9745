"""GPULab's own examples run on the default configuration of `make run` (issue 26 items 1, 3, 7):
the demo set-up (portal.bootstrap.bootstrap_demo: admin, project demo, cluster 1, slave local
on the local Docker engine with two declared GPUs, the examples' reservation), the default
settings, real Docker and a real watcher.

The documents are the seed pages' own, verbatim (tests/jobs/seed_texts.py), with the commas
the portal names repaired and one substitution: the image. The examples ask for
``debian:stable``, which these machines cannot pull (no registry); they run in a local image
that has what the examples use (a ``/bin/bash``, over busybox). Seed 002's start_job.sh is
written into the demo project's share, reached through /project_ghent as the examples say.
"""

import json
import os
import socket
import subprocess
import threading
import time
import urllib.request
import uuid
from pathlib import Path

import pytest
from rest_framework.test import APIClient

from accounts.tokens import api_token_rotate
from clusters.services import engine_for
from jobs.execution.logs import job_log_bytes
from jobs.execution.watcher import SlaveWatch
from jobs.models import Job
from jobs.user_actions.services import job_cancel, job_halt_request, job_submit
from portal.bootstrap import bootstrap_demo
from tests.integration.docker_support import TEST_IMAGE, docker_url, require_docker
from tests.jobs import seed_texts as seed

pytestmark = [pytest.mark.docker, pytest.mark.django_db(transaction=True)]

SEED_IMAGE = "gpuportal/seed-bash:latest"  # the test image plus /bin/bash (see module doc)
ENDS = ("FINISHED", "FAILED", "HALTED", "CANCELLED")


def docker(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    env = {**os.environ, "DOCKER_HOST": docker_url()}
    return subprocess.run(["docker", *args], env=env, capture_output=True, text=True, check=check)


def seed_image() -> str:
    """The local image the examples run in: busybox with a /bin/bash that runs its sh."""
    if docker("image", "inspect", SEED_IMAGE, check=False).returncode == 0:
        return SEED_IMAGE
    name = f"gpuportal-seed-bash-{uuid.uuid4().hex[:8]}"
    script = 'printf "#!/bin/sh\\nexec /bin/sh \\"\\$@\\"\\n" > /bin/bash && chmod 755 /bin/bash'
    docker("run", "--name", name, TEST_IMAGE, "sh", "-c", script)
    try:
        docker("commit", name, SEED_IMAGE)
    finally:
        docker("rm", "-f", name, check=False)
    return SEED_IMAGE


@pytest.fixture
def demo(settings, tmp_path):
    """`make run`'s set-up on the test engine; tasks inline, a watcher on slave local."""
    require_docker(docker_url())
    settings.VAR_DIR = tmp_path / "var"
    settings.PORTAL_LOCAL_DOCKER_URL = docker_url()
    settings.PORTAL_TASK_MODE = "inline"
    settings.PORTAL_HALT_GRACE_S = 5
    settings.PORTAL_STOP_GRACE_S = 1
    settings.PORTAL_INSTANCE = f"test-{os.getpid()}-{time.monotonic_ns()}"
    seed_image()
    result = bootstrap_demo()
    assert result.slave.online, result.slave.offline_reason
    share = Path(settings.PORTAL_STORAGE_BASE) / "project" / "demo"
    share.mkdir(parents=True, exist_ok=True)
    (share / "start_job.sh").write_text(seed.runnable_start_job())
    (share / "start_job.sh").chmod(0o755)
    stop = threading.Event()
    SlaveWatch(result.slave, stop).start()
    time.sleep(0.3)  # the event stream is open
    yield result
    stop.set()


def admin_of(demo):
    from django.contrib.auth import get_user_model

    return get_user_model().objects.get(username=demo.username)


def submit(demo, document) -> Job:
    """Submit as the demo admin in project demo, the image swapped for the local one."""
    from accounts.models import Project

    if isinstance(document, str):
        document = json.loads(document)
    document["request"]["docker"]["image"] = SEED_IMAGE
    return job_submit(
        user=admin_of(demo), project=Project.objects.get(name="demo"), document=document
    )


def wait_for(job: Job, *states: str, timeout: float = 30) -> Job:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job.refresh_from_db()
        if job.status in states:
            return job
        time.sleep(0.05)
    raise AssertionError(f"job stayed {job.status} (wanted {states}): {job.end_reason}")


def wait_for_log(job: Job, text: str, timeout: float = 15) -> str:
    deadline = time.monotonic() + timeout
    log = ""
    while time.monotonic() < deadline:
        log = job_log_bytes(job).decode(errors="replace")
        if text in log:
            return log
        time.sleep(0.1)
    raise AssertionError(f"{text!r} never appeared in the log of {job.uuid}: {log!r}")


def api(demo) -> APIClient:
    client = APIClient()
    _, key = api_token_rotate(user=admin_of(demo))
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


def test_hello_world_runs_at_once_and_finishes(demo):
    job = submit(demo, seed.REQUEST_V2_HELLOWORLD)  # interactive: started at once or failed
    done = wait_for(job, *ENDS)
    assert done.status == "FINISHED", done.end_reason
    assert "Hello World!" in job_log_bytes(done).decode()


def test_the_advanced_scheduling_job_runs_from_project_ghent(demo):
    """Interactive with a notBefore long past and a notAfter years ahead, its storage on
    /project_ghent, a bucket, the examples' reservation: started at once."""
    job = submit(demo, seed.commas_repaired(seed.SCHEDULING_ADVANCED_JOB))
    running = wait_for(job, "RUNNING", *ENDS)
    assert running.status == "RUNNING", running.end_reason
    log = wait_for_log(running, "GPULAB_RESTART_COUNT=0")
    assert "Job started at" in log and f"GPULAB_JOB_ID={running.uuid}" in log
    job_cancel(job=running, user=admin_of(demo))
    assert wait_for(running, "CANCELLED").status == "CANCELLED"


def test_the_restartable_job_halts_as_the_page_says_and_restarts(demo):
    """The page's start_job.sh traps SIGUSR1 and exits 123: HALTED, and a restart QUEUED that
    runs again with GPULAB_RESTART_COUNT=1 (its history starts with QUEUED; its
    slaveInstancePid is its container's PID)."""
    admin = admin_of(demo)
    first = wait_for(submit(demo, seed.commas_repaired(seed.SCHEDULING_RESTARTABLE_JOB)), "RUNNING")
    wait_for_log(first, "GPULAB_RESTART_COUNT=0")
    job_halt_request(job=first, user=admin)
    halted = wait_for(first, *ENDS)
    assert (halted.status, halted.exit_code) == ("HALTED", 123), halted.end_reason
    assert "saw SIGUSR1 @" in job_log_bytes(halted).decode()

    follow = wait_for(Job.objects.get(restart_of=halted), "RUNNING", *ENDS)
    assert follow.status == "RUNNING", follow.end_reason
    wait_for_log(follow, "GPULAB_RESTART_COUNT=1")
    client = api(demo)
    history = client.get(f"/api/gpulab/v4.0/jobs/{follow.uuid}/debug").json()
    assert history[0]["newState"] == "QUEUED" and history[0]["type"] == "Status Change"
    assert history[0]["msg"] == f"restart 1 of {halted.uuid}"
    states = [event["newState"] for event in history if event["newState"]]
    assert states[:4] == ["QUEUED", "ASSIGNED", "STARTING", "RUNNING"]

    resources = client.get(f"/api/gpulab/v4.0/jobs/{follow.uuid}").json()["state"]["resources"]
    with engine_for(follow.slave) as engine:
        pid = engine.inspect(follow.container_id).pid
    assert pid > 0 and resources["slaveInstancePid"] == pid
    job_cancel(job=follow, user=admin)
    wait_for(follow, "CANCELLED")


def test_host_port_8080_and_a_bucket_name_with_spaces_run(demo):
    with socket.socket() as probe:
        try:
            probe.bind(("0.0.0.0", 8080))
        except OSError:
            pytest.fail("host port 8080 is taken on this machine: the example needs it free")
    document = json.loads(seed.REQUEST_V2_HELLOWORLD)
    document["request"]["docker"].update(seed.fragment(seed.REQUEST_V2_HOST_PORT))
    document["request"]["docker"]["command"] = "httpd -f -p 80 -h /www"
    document["request"]["scheduling"]["maxSimultaneousJobs"] = json.loads(seed.SCHEDULING_BUCKET)
    running = wait_for(submit(demo, document), "RUNNING", *ENDS)
    assert running.status == "RUNNING", running.end_reason
    assert running.bucket_name == "my parameter sweep limit"
    assert [(m["containerPort"], m["hostPort"]) for m in running.port_mappings] == [(80, 8080)]
    deadline, body = time.monotonic() + 10, ""
    while time.monotonic() < deadline and "gpuportal test image" not in body:
        try:
            body = urllib.request.urlopen("http://127.0.0.1:8080/", timeout=2).read().decode()
        except OSError:
            time.sleep(0.2)
    assert "gpuportal test image" in body
    job_cancel(job=running, user=admin_of(demo))
    wait_for(running, "CANCELLED")
