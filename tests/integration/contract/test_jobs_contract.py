"""Job life cycles end to end, the same tests on the scripted engine and on real Docker:
submit -> tick -> launch -> container -> watcher -> finish, cancel, halt, restart, reconcile.

Tasks run inline (right after commit, in this process) and a real watcher thread follows the
engine's events, as the watcher process does in production. Moved here from
tests/integration/test_jobs_e2e.py, which keeps what only Docker can show (storage on disk,
reachable ports, OOM kills, several engines, an engine that stops).
"""

import os
import threading
import time
import uuid
from datetime import timedelta

import pytest

from accounts.models import Membership, Project
from clusters.models import Slave
from clusters.runtime.spec import ContainerSpec
from clusters.services import engine_for
from jobs.execution.container_spec import LABEL_JOB, slave_labels
from jobs.execution.logs import job_log_bytes, job_log_range
from jobs.execution.reconcile import reconcile_all
from jobs.execution.watcher import SlaveWatch
from jobs.models import Job
from jobs.scheduler_bridge.tick import tick
from jobs.user_actions.services import job_cancel, job_halt_request
from tests.support.runtime import (
    HALTABLE,
    SHARED_COMMANDS,
    TEST_IMAGE,
    add_slave,
    job_doc,
    log_text,
    submit,
    wait_container_removed,
    wait_for,
)
from tests.support.scripted_engine import ENVIRONMENT, Behaviour, Reaction, err, out

pytestmark = pytest.mark.django_db(transaction=True)

STUBBORN = "sh -c 'trap \"echo ignored\" USR1; while true; do sleep 0.2; done'"
LIVE_LOG = "sh -c 'for i in 1 2 3 4 5 6; do echo line-$i; echo err-$i >&2; sleep 0.4; done'"
# What each command of these tests does: the scripted engine plays it, Docker runs it.
COMMANDS = {
    **SHARED_COMMANDS,
    "sh -c 'env | sort; echo all-done'": Behaviour([ENVIRONMENT, "all-done"]),
    "sh -c 'echo oops; exit 3'": Behaviour(["oops"], exit_code=3),
    STUBBORN: Behaviour(runs_for=None, on_signal={"USR1": Reaction(["ignored"], delay=0.2)}),
    "sh -c 'echo started; sleep 300'": Behaviour(["started"], runs_for=300),
    "sh -c 'echo quick; sleep 1'": Behaviour(["quick"], runs_for=1),
    LIVE_LOG: Behaviour(
        [
            line
            for i in range(6)
            for line in (out(f"line-{i + 1}", at=0.4 * i), err(f"err-{i + 1}", at=0.4 * i))
        ],
        runs_for=2.4,
    ),
}


@pytest.fixture(autouse=True)
def _commands(scripted_world):
    scripted_world.script(COMMANDS)


@pytest.fixture
def runtime(settings):
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


@pytest.fixture
def local(people, engine_url):
    slave = add_slave("local", engine_url)
    assert slave.online, slave.offline_reason
    return slave


@pytest.fixture
def watcher(runtime):
    """Real watcher threads for every slave registered when it starts."""
    stop = threading.Event()

    def start():
        for slave in Slave.objects.all():
            with engine_for(slave) as engine:
                opened = getattr(engine, "streams_opened", lambda: None)()
                SlaveWatch(slave, stop).start()
                if opened is None:
                    time.sleep(0.3)  # Docker: let the event stream open
                    continue
                deadline = time.monotonic() + 10  # scripted: wait until it has
                while engine.streams_opened() <= opened:
                    assert time.monotonic() < deadline, "the watcher never opened its stream"
                    time.sleep(0.02)

    yield start
    stop.set()


def test_env_job_finishes_with_archived_log(people, local, watcher):
    watcher()
    doc = job_doc("sh -c 'env | sort; echo all-done'", docker__environment={"MY_VAR": "x1"})
    doc["request"]["docker"]["projectGidVariableName"] = "PROJ_GID"
    doc["name"] = "e2e"
    done = wait_for(submit(people, doc), "FINISHED", "FAILED")
    assert done.status == "FINISHED", done.end_reason
    assert done.exit_code == 0 and done.log_archived
    text = log_text(done)
    for expected in [
        f"GPULAB_JOB_ID={done.uuid}",
        "GPULAB_RESTART_COUNT=0",
        f"GPULAB_RESTART_INITIAL_JOB_ID={done.uuid}",
        "GPULAB_PROJECT=e2e",
        "GPULAB_USERNAME=carol",
        "GPULAB_GPUS_RESERVED=1",
        "GPULAB_CPUS_RESERVED=1",
        "GPULAB_MEM_RESERVED=1024m",
        "GPULAB_CLUSTER_ID=1",
        "GPULAB_SLAVE_HOSTNAME=local",
        f"CUDA_VISIBLE_DEVICES={done.gpu_ids[0]}",
        "MY_VAR=x1",
        "PROJ_GID=4321",
        "all-done",
    ]:
        assert expected in text, expected
    wait_container_removed(local, done)  # the container is gone once the log is archived


def test_failing_command_fails_with_exit_code(people, local, watcher):
    watcher()
    done = wait_for(submit(people, job_doc("sh -c 'echo oops; exit 3'")), "FINISHED", "FAILED")
    assert done.status == "FAILED" and done.exit_code == 3
    assert "exit code 3" in done.end_reason
    assert "oops" in log_text(done)
    wait_container_removed(local, done)


def test_halt_then_restart_continues_with_restart_count(people, local, watcher):
    watcher()
    user, _ = people
    doc = job_doc(HALTABLE, scheduling__restartable=True, scheduling__maxDuration="2 hours")
    first = wait_for(submit(people, doc), "RUNNING")
    time.sleep(2)  # run long enough for the continuation's maxDuration to shrink
    job_halt_request(job=first, user=user)
    halted = wait_for(first, "HALTED", "FAILED")
    assert halted.status == "HALTED", halted.end_reason
    assert halted.exit_code == 123 and "saw-usr1" in log_text(halted)
    assert halted.halt_events[0]["reason"] == "User requested fallback manually"
    follow = Job.objects.get(restart_of=halted)
    assert follow.restart_count == 1 and str(follow.initial_job_uuid) == str(halted.uuid)
    assert follow.max_duration_s < 2 * 3600
    follow = wait_for(follow, "RUNNING")
    deadline = time.monotonic() + 10
    while "restart-count" not in log_text(follow) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert f"restart-count=1 initial={halted.uuid}" in log_text(follow)
    job_cancel(job=follow, user=user)
    wait_for(follow, "CANCELLED")
    wait_container_removed(local, follow)


def test_job_ignoring_sigusr1_fails_after_grace(people, local, watcher):
    watcher()
    user, _ = people
    running = wait_for(submit(people, job_doc(STUBBORN)), "RUNNING")
    time.sleep(0.3)
    began = time.monotonic()
    job_halt_request(job=running, user=user)
    failed = wait_for(running, "FAILED", "HALTED", timeout=20)
    assert failed.status == "FAILED" and "halt procedure not obeyed" in failed.end_reason
    assert time.monotonic() - began >= 2.5  # the 3 s grace period was honoured
    wait_container_removed(local, failed)


def test_halt_without_signal_when_allowed(people, local, watcher):
    watcher()
    user, _ = people
    doc = job_doc("sleep 300", scheduling__allowHaltWithoutSignal=True)
    running = wait_for(submit(people, doc), "RUNNING")
    job_halt_request(job=running, user=user)
    halted = wait_for(running, "HALTED", "FAILED", timeout=20)
    assert halted.status == "HALTED", halted.end_reason
    wait_container_removed(local, halted)


def test_cancel_stops_the_container_and_keeps_the_log(people, local, watcher):
    watcher()
    user, _ = people
    running = wait_for(submit(people, job_doc("sh -c 'echo started; sleep 300'")), "RUNNING")
    time.sleep(0.3)
    job_cancel(job=running, user=user)
    cancelled = wait_for(running, "CANCELLED")
    assert "started" in log_text(cancelled)
    wait_container_removed(local, cancelled)


def test_max_duration_reached_cancels(people, local, watcher):
    watcher()
    doc = job_doc("sleep 300", scheduling__maxDuration="1 minute")
    running = wait_for(submit(people, doc), "RUNNING")
    tick(now=running.started_at + timedelta(seconds=61))
    cancelled = wait_for(running, "CANCELLED")
    assert "maxDuration" in cancelled.end_reason
    wait_container_removed(local, cancelled)


def test_watcher_down_reconcile_still_finishes(people, local):
    running = wait_for(submit(people, job_doc("sh -c 'echo quick; sleep 1'")), "RUNNING")
    with engine_for(local) as engine:
        engine.wait(running.container_id, timeout_s=20)
    running.refresh_from_db()
    assert running.status == "RUNNING"  # nobody watched the exit
    reconcile_all()
    running.refresh_from_db()
    assert running.status == "FINISHED" and "quick" in log_text(running)


def test_reconcile_removes_containers_of_unknown_or_ended_jobs(people, local, runtime):
    ended = wait_for(submit(people, job_doc("true")), "RUNNING", "FINISHED")
    reconcile_all()
    wait_for(ended, "FINISHED")
    strays = {str(uuid.uuid4()): None, str(ended.uuid): None}
    with engine_for(local) as engine:
        for job_uuid in strays:
            labels = {LABEL_JOB: job_uuid, **slave_labels(local.pk)}
            strays[job_uuid] = engine.run(
                ContainerSpec(image=TEST_IMAGE, command=("sleep", "300"), labels=labels)
            )
        reconcile_all()
        for job_uuid in strays:
            assert engine.find_by_label(LABEL_JOB, job_uuid) == []
    assert ended.events.filter(message__startswith="stopped stray container").exists()


def test_live_log_ranges_add_up_to_the_archive(people, local, watcher):
    """Followers read the live log by offsets; what they saw equals the archived log."""
    watcher()
    running = wait_for(submit(people, job_doc(LIVE_LOG)), "RUNNING")
    seen, offset, reads = b"", 0, 0
    deadline = time.monotonic() + 30
    while True:
        assert time.monotonic() < deadline, f"the job stayed {running.status}"
        running.refresh_from_db()
        data, total = job_log_range(running, offset)
        assert total >= offset
        seen += data
        offset += len(data)
        reads += 1
        if running.status not in ("RUNNING", "STARTING") and running.log_archived:
            data, _ = job_log_range(running, offset)
            seen += data
            break
        time.sleep(0.15)
    assert running.status == "FINISHED" and reads > 3
    assert seen == job_log_bytes(running)
    assert seen.count(b"line-") == 6 and seen.count(b"err-") == 6
    wait_container_removed(local, running)
