"""Jobs end to end on real Docker engines: what only Docker can show (storage on disk, links,
reachable ports, OOM kills, several engines, an engine that stops, registry failures).

The life cycle every engine shares (finish, exit codes, cancel, halt, restart, maxDuration,
reconcile, live logs) is in tests/integration/contract/test_jobs_contract.py, run on Docker
and on the scripted engine alike. Tasks run inline (right after commit, in this process); a
real watcher thread follows the engine's events, as the watcher process does in production.
"""

import copy
import os
import subprocess
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from accounts.models import Membership, Project
from clusters.models import Cluster, Slave
from clusters.services import engine_for, slave_declare_gpus, slave_probe, slave_register
from jobs.execution.logs import job_log_bytes
from jobs.execution.reconcile import reconcile_all
from jobs.execution.watcher import SlaveWatch
from jobs.models import Job
from jobs.spec import SpecError
from jobs.user_actions.services import job_cancel, job_halt_request, job_submit
from tests.integration.docker_support import (
    TEST_IMAGE,
    docker_url,
    require_docker,
    require_extra_engine,
)

pytestmark = [pytest.mark.docker, pytest.mark.django_db(transaction=True)]
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def runtime(settings, tmp_path):
    require_docker(docker_url())
    settings.PORTAL_TASK_MODE = "inline"
    settings.PORTAL_HALT_GRACE_S = 3
    settings.PORTAL_STOP_GRACE_S = 2
    settings.PORTAL_INSTANCE = f"test-{os.getpid()}-{time.monotonic_ns()}"
    return settings


@pytest.fixture
def people(runtime, django_user_model):
    user = django_user_model.objects.create_user("carol", "carol@example.org", "pw")
    project = Project.objects.create(name="e2e", gid=4321)
    Membership.objects.create(user=user, project=project)
    return user, project


def add_slave(name: str, url: str, gpus: int = 2) -> Slave:
    cluster, _ = Cluster.objects.get_or_create(id=1)
    slave = slave_register(name=name, cluster=cluster, docker_url=url, host="127.0.0.1")
    slave_declare_gpus(slave=slave, gpus=[("Demo GPU", 1024)] * gpus)
    return slave_probe(slave=slave)


@pytest.fixture
def local(people):
    slave = add_slave("local", docker_url())
    assert slave.online, slave.offline_reason
    return slave


@pytest.fixture
def watcher(runtime):
    """Real watcher threads for every slave registered when it starts."""
    stop = threading.Event()
    threads = []

    def start():
        for slave in Slave.objects.all():
            thread = SlaveWatch(slave, stop)
            thread.start()
            threads.append(thread)
        time.sleep(0.3)  # let the event streams open

    yield start
    stop.set()


def job(command, *, gpus=1, **extra) -> dict:
    doc = {
        "name": "e2e",
        "request": {
            "resources": {"gpus": gpus, "cpus": 1, "cpuMemoryGb": 1},
            "docker": {"image": TEST_IMAGE, "command": command},
            "scheduling": {},
        },
    }
    for path, value in extra.items():
        section, key = path.split("__")
        doc["request"][section][key] = value
    return doc


def submit(people, document) -> Job:
    user, project = people
    return job_submit(user=user, project=project, document=copy.deepcopy(document))


def wait_for(job: Job, *states: str, timeout: float = 30) -> Job:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job.refresh_from_db()
        if job.status in states:
            return job
        time.sleep(0.1)
    raise AssertionError(f"job stayed {job.status} (wanted {states}): {job.end_reason}")


def log_text(job: Job) -> str:
    return job_log_bytes(job).decode(errors="replace")


def test_port_mapping_is_reachable_on_reported_port(people, local):
    command = "sh -c 'echo hello-from-job > /tmp/index.html; httpd -f -p 8080 -h /tmp'"
    running = wait_for(submit(people, job(command, docker__portMappings=[8080])), "RUNNING")
    [mapping] = [m for m in running.port_mappings if m["containerPort"] == 8080][:1]
    deadline, body = time.monotonic() + 10, ""
    while time.monotonic() < deadline and "hello" not in body:
        try:
            url = f"http://127.0.0.1:{mapping['hostPort']}/index.html"
            body = urllib.request.urlopen(url, timeout=2).read().decode()
        except OSError:
            time.sleep(0.2)
    assert body.strip() == "hello-from-job"
    user, _ = people
    job_cancel(job=running, user=user)
    assert wait_for(running, "CANCELLED").status == "CANCELLED"


def test_storage_mount_writes_into_project_folder(people, local, watcher, runtime):
    watcher()
    doc = job(
        "sh -c 'echo result-42 > /project/out.txt'", docker__storage=[{"containerPath": "/project"}]
    )
    done = wait_for(submit(people, doc), "FINISHED", "FAILED")
    assert done.status == "FINISHED", done.end_reason
    written = Path(runtime.PORTAL_STORAGE_BASE) / "project" / "e2e" / "out.txt"
    assert written.read_text().strip() == "result-42"
    assert written.parent.stat().st_gid == 4321


def test_symlink_escape_is_refused_at_launch(people, local, watcher, runtime, tmp_path):
    watcher()
    folder = Path(runtime.PORTAL_STORAGE_BASE) / "project" / "e2e"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "escape").symlink_to(tmp_path)
    doc = job("true", docker__storage=[{"hostPath": "/project/escape/", "containerPath": "/x"}])
    done = wait_for(submit(people, doc), "FAILED", "FINISHED")
    assert done.status == "FAILED" and "symlink" in done.end_reason


def test_link_planted_by_one_job_never_redirects_the_next(people, local, watcher, tmp_path):
    """Issue 10.1: job A plants a link in /project, job B mounts it; the target stays as it was
    (the old launch chowned and chmodded it to 2775 root:<project gid> before refusing)."""
    watcher()
    victim = tmp_path / "victim"
    victim.mkdir()
    os.chown(victim, 0, 0)
    os.chmod(victim, 0o700)
    before = os.lstat(victim)
    plant = job(f"ln -s {victim} /project/evil", docker__storage=[{"containerPath": "/project"}])
    planted = wait_for(submit(people, plant), "FINISHED", "FAILED")
    assert planted.status == "FINISHED", planted.end_reason
    doc = job("true", docker__storage=[{"hostPath": "/project/evil", "containerPath": "/x"}])
    refused = wait_for(submit(people, doc), "FAILED", "FINISHED")
    assert refused.status == "FAILED"
    assert "storage:" in refused.end_reason and "/project/evil is a symlink" in refused.end_reason
    after = os.lstat(victim)
    assert (after.st_mode, after.st_uid, after.st_gid) == (before.st_mode, 0, 0)
    assert os.listdir(victim) == []


def test_forbidden_host_path_is_refused_at_submit(people, local):
    with pytest.raises(SpecError) as caught:
        submit(people, job("true", docker__storage=[{"hostPath": "/var/run/docker.sock"}]))
    assert "request.docker.storage[0].hostPath" in str(caught.value)
    assert Job.objects.count() == 0


NOT_OBEYED = "halt procedure not obeyed: exit code {} after SIGUSR1 (only 123 means halted)"


@pytest.mark.parametrize(
    "code,status,reason",
    [(0, "FAILED", NOT_OBEYED.format(0)), (3, "FAILED", NOT_OBEYED.format(3))],
)
def test_job_ending_on_sigusr1_with_another_code_than_123_fails(
    people, local, watcher, code, status, reason
):
    """The job exits (not with 123) right when SIGUSR1 arrives: after the signal, GPULab's
    scheduling page counts any other exit code as FAILED, 0 included (issue 26 item 3; an end
    before the signal keeps its own code: tests/integration/test_halt_outcomes_e2e.py)."""
    watcher()
    user, _ = people
    ending = f"sh -c 'trap \"exit {code}\" USR1; while true; do sleep 0.2; done'"
    running = wait_for(submit(people, job(ending)), "RUNNING")
    time.sleep(0.3)
    job_halt_request(job=running, user=user)
    done = wait_for(running, "FINISHED", "FAILED", "HALTED", timeout=20)
    assert (done.status, done.exit_code, done.end_reason) == (status, code, reason)


def test_jobs_spread_over_three_engines(people, runtime):
    urls = [docker_url(), require_extra_engine(0), require_extra_engine(1)]
    slaves = [add_slave(f"s{i}", url, gpus=1) for i, url in enumerate(urls)]
    assert all(s.online for s in slaves)
    jobs = [submit(people, job("sleep 300")) for _ in range(3)]
    for each in jobs:
        wait_for(each, "RUNNING")
    assert {j.slave.name for j in Job.objects.filter(pk__in=[j.pk for j in jobs])} == {
        "s0",
        "s1",
        "s2",
    }
    user, _ = people
    for each in jobs:
        with engine_for(each.slave) as engine:
            assert engine.inspect(each.container_id).running
        job_cancel(job=each, user=user)
    for each in jobs:
        wait_for(each, "CANCELLED")


def test_stopped_engine_goes_offline_and_its_job_fails_after_grace(people, runtime):
    url = require_extra_engine(1)  # slave3: stopped here, started again at the end
    slave = add_slave("doomed", url, gpus=1)
    running = wait_for(submit(people, job("sleep 300")), "RUNNING")
    runtime.PORTAL_SLAVE_LOST_GRACE_S = 1
    pidfile = Path("/var/run/gpuportal/slave3.pid")
    try:
        subprocess.run(["kill", pidfile.read_text().strip()], check=True)
        deadline = time.monotonic() + 30
        while Path(url.removeprefix("unix://")).exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        reconcile_all()
        slave.refresh_from_db()
        assert slave.online is False and "unreachable" in slave.offline_reason
        running.refresh_from_db()
        assert running.status == "RUNNING"  # within the grace period it may still be running
        time.sleep(1.2)
        reconcile_all()
        running.refresh_from_db()
        assert running.status == "FAILED" and "slave lost" in running.end_reason
    finally:
        subprocess.run([str(ROOT / "scripts/docker-engines.sh"), "start"], check=False)


def test_out_of_memory_is_reported(people, local, watcher):
    watcher()
    # sort holds its whole input: one 1.5 GB line against the 1 GB limit (swap disabled). It is
    # CPU-bound: on a loaded 2-core machine it can take a minute to reach the limit.
    hog = ["sh", "-c", "head -c 1500m /dev/zero | tr '\\0' a | sort > /dev/null"]
    done = wait_for(submit(people, job(hog)), "FINISHED", "FAILED", timeout=180)
    assert done.status == "FAILED"
    assert "killed by the kernel for using more than its 1 GB memory" in done.end_reason


def test_pull_failure_fails_the_job_without_leaking_the_password(people, local, runtime):
    # A loopback registry is refused at submit unless the site allows it (item 7 of issue 10).
    runtime.PORTAL_ALLOWED_PRIVATE_REGISTRIES = ["127.0.0.1:1"]
    doc = job("true")
    doc["request"]["docker"]["image"] = "deploy:s3cretPW@127.0.0.1:1/team/nope:v1"
    failed = wait_for(submit(people, doc), "FAILED", "RUNNING", timeout=60)
    assert failed.status == "FAILED"
    assert "could not start the container" in failed.end_reason
    assert "127.0.0.1:1/team/nope" in failed.end_reason
    events = " ".join(failed.events.values_list("message", flat=True))
    assert "s3cretPW" not in failed.end_reason + events + str(failed.request)
