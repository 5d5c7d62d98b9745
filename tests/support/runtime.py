"""Job-lifecycle helpers shared by the fast runtime tests (scripted engine) and the contract
suite (the same tests on the scripted engine and on real Docker)."""

from __future__ import annotations

import copy
import time

from clusters.models import Cluster, Slave
from clusters.services import engine_for, slave_declare_gpus, slave_probe, slave_register
from jobs.execution.logs import job_log_bytes
from jobs.models import Job
from jobs.user_actions.services import job_submit
from tests.support.scripted_engine import Behaviour, Reaction

TEST_IMAGE = "gpuportal/busybox:latest"

# Obeys a halt: exit 123 on SIGUSR1, prints its restart count first.
HALTABLE = (
    'sh -c \'trap "echo saw-usr1; exit 123" USR1; '
    "echo restart-count=$GPULAB_RESTART_COUNT initial=$GPULAB_RESTART_INITIAL_JOB_ID; "
    "while true; do sleep 0.2; done'"
)
# Handles SIGUSR1 without exiting: the halt procedure is not obeyed.
STUBBORN = "sh -c 'trap \"echo ignored\" USR1; echo ready; while true; do sleep 0.2; done'"

# What these commands do on the scripted engine (real Docker runs them in busybox).
SHARED_COMMANDS = {
    HALTABLE: Behaviour(
        output=["restart-count=$GPULAB_RESTART_COUNT initial=$GPULAB_RESTART_INITIAL_JOB_ID"],
        runs_for=None,
        on_signal={"USR1": Reaction(["saw-usr1"], exit_code=123)},
    ),
    STUBBORN: Behaviour(output=["ready"], runs_for=None, on_signal={"USR1": Reaction(["ignored"])}),
    "sleep 300": Behaviour(runs_for=300),
    "true": Behaviour(),
}


def add_slave(name: str, url: str, gpus: int = 2) -> Slave:
    cluster, _ = Cluster.objects.get_or_create(id=1)
    slave = slave_register(name=name, cluster=cluster, docker_url=url, host="127.0.0.1")
    slave_declare_gpus(slave=slave, gpus=[("Demo GPU", 1024)] * gpus)
    return slave_probe(slave=slave)


def job_doc(command, *, gpus=1, image=TEST_IMAGE, **extra) -> dict:
    """A job document; ``section__key=value`` sets request.section.key."""
    doc = {
        "name": "runtime",
        "request": {
            "resources": {"gpus": gpus, "cpus": 1, "cpuMemoryGb": 1},
            "docker": {"image": image, "command": command},
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
    while True:
        job.refresh_from_db()
        if job.status in states:
            return job
        if time.monotonic() > deadline:
            raise AssertionError(f"job stayed {job.status} (wanted {states}): {job.end_reason}")
        time.sleep(0.05)


def containers_of(slave: Slave, job: Job) -> list:
    with engine_for(slave) as engine:
        return engine.find_by_label("gpuportal.job", str(job.uuid))


def wait_container_removed(slave: Slave, job: Job, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while containers_of(slave, job):
        assert time.monotonic() < deadline, f"container of {job.uuid} was not removed"
        time.sleep(0.05)


def log_text(job: Job) -> str:
    return job_log_bytes(job).decode(errors="replace")
