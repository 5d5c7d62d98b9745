"""History details GPULab's client shows (issue 26 item 7): a restarted job's history starts with
a QUEUED row, as a submitted job's does (`gpulab-cli debug`, GET jobs/ID/debug); its
state.resources.slaveInstancePid is its container's PID (Docker's State.Pid, read at launch).
End to end on real Docker: tests/integration/test_seed_examples_run.py."""

import copy

import pytest
from django.utils import timezone

from clusters.runtime.engine import _state
from jobs.api.gpulab_json import job_to_gpulab
from jobs.execution.runs import job_restart_create
from jobs.models import Job
from tests.api.conftest import API, put_state
from tests.conftest import HELLO_WORLD

pytestmark = pytest.mark.django_db


def restartable():
    document = copy.deepcopy(HELLO_WORLD)
    document["request"]["scheduling"] = {"restartable": True, "maxDuration": "2 hours"}
    return document


def test_a_restarted_jobs_history_starts_with_queued(submit, slave, member, client):
    halted = put_state(
        submit(restartable()), "HALTED", slave=slave, gpu_ids=[0], started_at=timezone.now()
    )
    follow = job_restart_create(job=halted)
    assert follow is not None and follow.status == "QUEUED"
    first = follow.events.order_by("time", "id").first()
    assert (first.type, first.new_state) == ("Status Change", "QUEUED")
    assert first.message == f"restart 1 of {halted.uuid}"
    assert follow.events.filter(new_state="QUEUED").count() == 1
    client.force_login(member)
    history = client.get(f"{API}jobs/{follow.uuid}/debug").json()
    assert history[0]["newState"] == "QUEUED" and history[0]["type"] == "Status Change"


def test_slave_instance_pid_is_the_containers_pid(submit, slave, member):
    job = put_state(submit(), "RUNNING", slave=slave, gpu_ids=[0], container_id="c" * 64)
    Job.objects.filter(pk=job.pk).update(container_pid=48213)
    job = Job.objects.select_related("owner", "project", "slave").get(pk=job.pk)
    resources = job_to_gpulab(job, viewer=member)["state"]["resources"]
    assert resources["slaveInstancePid"] == 48213
    Job.objects.filter(pk=job.pk).update(container_pid=None)  # not known: GPULab's 0
    job.refresh_from_db()
    assert job_to_gpulab(job, viewer=member)["state"]["resources"]["slaveInstancePid"] == 0


def test_the_engine_reads_the_pid_of_a_running_container():
    running = {
        "Id": "abc",
        "Name": "/gpuportal-x",
        "State": {"Status": "running", "Running": True, "Pid": 4321, "ExitCode": 0},
    }
    assert _state(running).pid == 4321
    stopped = {**running, "State": {"Status": "exited", "Running": False, "Pid": 0}}
    assert _state(stopped).pid == 0
