"""Isolation rules a job cannot get around: GPU-selecting and GPULAB_* variables belong to the
portal, fixed host ports stay inside the site's range on the allowed addresses."""

import copy
import json

import pytest

from clusters.models import Gpu, Slave
from jobs.execution.container_spec import container_spec, job_environment
from jobs.models import Job
from jobs.spec import SpecError
from tests.api.conftest import API, put_state
from tests.conftest import HELLO_WORLD

pytestmark = pytest.mark.django_db
D = "request.docker"


def document(**docker) -> dict:
    doc = copy.deepcopy(HELLO_WORLD)
    doc["request"]["docker"].update(docker)
    return doc


def refusals(submit, doc) -> dict[str, str]:
    with pytest.raises(SpecError) as caught:
        submit(doc)
    assert Job.objects.count() == 0
    return {e.path: e.message for e in caught.value.errors}


# --- environment --------------------------------------------------------------------------


def test_gpu_selecting_and_portal_variables_are_refused_at_submit(submit):
    errors = refusals(
        submit,
        document(
            environment={
                "NVIDIA_VISIBLE_DEVICES": "all",
                "CUDA_VISIBLE_DEVICES": "0,1,2,3",
                "NVIDIA_DRIVER_CAPABILITIES": "all",
                "NVIDIA_MIG_CONFIG_DEVICES": "all",
                "GPULAB_JOB_ID": "mine",
                "gpulab_project": "x",
                "cuda_visible_devices": "1",
                "MY_OWN": "fine",
            }
        ),
    )
    assert errors == {
        f"{D}.environment.NVIDIA_VISIBLE_DEVICES": "set by the portal; a job cannot choose its GPUs",
        f"{D}.environment.CUDA_VISIBLE_DEVICES": "set by the portal; a job cannot choose its GPUs",
        f"{D}.environment.cuda_visible_devices": "set by the portal; a job cannot choose its GPUs",
        f"{D}.environment.NVIDIA_DRIVER_CAPABILITIES": (
            "NVIDIA_* variables are set by the portal; a job cannot set them"
        ),
        f"{D}.environment.NVIDIA_MIG_CONFIG_DEVICES": (
            "NVIDIA_* variables are set by the portal; a job cannot set them"
        ),
        f"{D}.environment.GPULAB_JOB_ID": (
            "GPULAB_* variables are set by the portal; a job cannot set them"
        ),
        f"{D}.environment.gpulab_project": (
            "GPULAB_* variables are set by the portal; a job cannot set them"
        ),
    }


def test_project_gid_variable_cannot_name_a_reserved_variable(submit):
    errors = refusals(submit, document(projectGidVariableName="NVIDIA_VISIBLE_DEVICES"))
    assert errors == {
        f"{D}.projectGidVariableName": "set by the portal; a job cannot choose its GPUs"
    }


def test_api_answers_400_naming_the_variable(member, slave):
    from rest_framework.test import APIClient

    member_client = APIClient()
    member_client.force_authenticate(member)
    body = {
        **document(environment={"NVIDIA_VISIBLE_DEVICES": "all"}),
        "owner": {"projectUrn": "vision"},
    }
    response = member_client.post(
        API + "jobs", data=json.dumps(body), content_type="application/json"
    )
    assert response.status_code == 400
    assert (
        f"{D}.environment.NVIDIA_VISIBLE_DEVICES: set by the portal; a job cannot choose its GPUs"
        in response.json()["errors"]
    )
    assert Job.objects.count() == 0


def test_ordinary_variables_are_kept(submit):
    job = submit(document(environment={"MY_GPU_COUNT": 2, "NVIDIA": "x", "CUDA_HOME": "/c"}))
    assert job.request["docker"]["environment"] == {
        "MY_GPU_COUNT": 2,
        "NVIDIA": "x",
        "CUDA_HOME": "/c",
    }


def _sneak(job, **environment):
    """A stored request carrying reserved variables (stored before the rule, or edited)."""
    job.request["docker"]["environment"] = environment
    job.request["docker"]["projectGidVariableName"] = "GPULAB_GPUS_RESERVED"
    job.save(update_fields=["request"])
    return job


def test_declared_slave_portal_variables_win_at_launch(submit, slave):
    job = put_state(submit(), "ASSIGNED", slave=slave, gpu_ids=[2], cpu_ids=[0, 1])
    _sneak(
        job,
        NVIDIA_VISIBLE_DEVICES="all",
        CUDA_VISIBLE_DEVICES="0,1,2,3",
        NVIDIA_DRIVER_CAPABILITIES="all",
        GPULAB_JOB_ID="forged",
        KEEP="me",
    )
    env = job_environment(job, slave)
    assert env["NVIDIA_VISIBLE_DEVICES"] == "2" and env["CUDA_VISIBLE_DEVICES"] == "2"
    assert env["GPULAB_JOB_ID"] == str(job.uuid)
    assert env["GPULAB_GPUS_RESERVED"] == "1"  # not the project GID
    assert "NVIDIA_DRIVER_CAPABILITIES" not in env
    assert env["KEEP"] == "me"


def test_declared_slave_without_gpus_gets_none(submit, slave):
    job = put_state(submit(), "ASSIGNED", slave=slave, gpu_ids=[], cpu_ids=[0])
    _sneak(job, CUDA_VISIBLE_DEVICES="0")
    env = job_environment(job, slave)
    assert env["NVIDIA_VISIBLE_DEVICES"] == "none" and env["CUDA_VISIBLE_DEVICES"] == ""


@pytest.fixture
def nvidia_slave(slave):
    Slave.objects.filter(pk=slave.pk).update(gpu_mode=Slave.GpuMode.NVIDIA)
    for gpu in Gpu.objects.filter(slave=slave):
        gpu.uuid = f"GPU-{gpu.index}aaa"
        gpu.save()
    return Slave.objects.get(pk=slave.pk)


def test_nvidia_slave_visible_devices_follow_the_device_request(submit, nvidia_slave):
    job = put_state(submit(), "ASSIGNED", slave=nvidia_slave, gpu_ids=[1], cpu_ids=[0])
    _sneak(job, NVIDIA_VISIBLE_DEVICES="all", CUDA_VISIBLE_DEVICES="0,1,2,3")
    spec = container_spec(job, nvidia_slave, [])
    assert spec.gpu_device_ids == ("GPU-1aaa",)
    assert spec.environment["NVIDIA_VISIBLE_DEVICES"] == "GPU-1aaa"
    assert "CUDA_VISIBLE_DEVICES" not in spec.environment  # the container sees only its GPU


def test_nvidia_slave_job_without_gpus_gets_void(submit, nvidia_slave):
    """An engine whose default runtime is nvidia reads the variable (images such as
    nvidia/cuda set it to "all"): "void" gives no GPU at all."""
    job = put_state(submit(), "ASSIGNED", slave=nvidia_slave, gpu_ids=[], cpu_ids=[0])
    _sneak(job, NVIDIA_VISIBLE_DEVICES="all")
    spec = container_spec(job, nvidia_slave, [])
    assert spec.gpu_device_ids is None
    assert spec.environment["NVIDIA_VISIBLE_DEVICES"] == "void"


# --- host ports ----------------------------------------------------------------------------


def test_fixed_host_ports_outside_the_policy_are_refused_at_submit(submit):
    errors = refusals(
        submit,
        document(
            portMappings=[
                {"containerPort": 22, "hostPort": 22},
                {"containerPort": 2375, "hostPort": 2375, "hostIp": "0.0.0.0"},
                {"containerPort": 80, "hostPort": 8080},  # GPULab's own example: allowed
                {"containerPort": 81, "hostPort": 20081, "hostIp": "127.0.0.1"},
                {"containerPort": 82},
                {"containerPort": 83, "hostPort": 8000},
                {"containerPort": 84, "hostPort": 2222},
            ]
        ),
    )
    assert errors == {
        f"{D}.portMappings[0].hostPort": "22 is refused (a privileged port (below 1024))",
        f"{D}.portMappings[1].hostPort": "2375 is refused (a Docker engine port)",
        f"{D}.portMappings[3].hostIp": (
            "must be one of 0.0.0.0, :: (addresses jobs may publish on)"
        ),
        f"{D}.portMappings[5].hostPort": "8000 is refused (the portal's web server)",
        f"{D}.portMappings[6].hostPort": "2222 is refused (the portal's SSH gateway)",
    }


def test_refused_ports_and_a_narrowed_site_range(submit, settings):
    settings.PORTAL_HOST_PORT_RANGE = "1024-65535"
    settings.PORTAL_REFUSED_HOST_PORTS = ["2375", "9000-9010"]
    settings.PORTAL_SSH_PORT = 2022
    errors = refusals(
        submit,
        document(
            portMappings=[
                {"containerPort": 1, "hostPort": 2375},
                80,
                {"containerPort": 2, "hostPort": 9005},
                {"containerPort": 3, "hostPort": 2022},
                {"containerPort": 4, "hostPort": 80},
            ]
        ),
    )
    assert errors == {
        f"{D}.portMappings[0].hostPort": "2375 is refused (a Docker engine port)",
        f"{D}.portMappings[2].hostPort": "9005 is refused (listed in PORTAL_REFUSED_HOST_PORTS)",
        f"{D}.portMappings[3].hostPort": "2022 is refused (the portal's SSH gateway)",
        f"{D}.portMappings[4].hostPort": (
            "must be between 1024 and 65535 (this site's range for fixed host ports)"
        ),
    }
    job = submit(document(portMappings=[{"containerPort": 80, "hostPort": 8080}]))
    assert job.request["docker"]["portMappings"][0]["hostPort"] == 8080


def test_random_and_in_range_ports_are_accepted(submit):
    job = submit(
        document(
            portMappings=[
                80,
                {"containerPort": 81, "hostPort": 20081},
                {"containerPort": 82, "hostPort": 29999, "hostIp": "0.0.0.0"},
                {"containerPort": 83, "hostIp": "::"},
            ]
        )
    )
    assert [m["hostPort"] for m in job.request["docker"]["portMappings"]] == [
        None,
        20081,
        29999,
        None,
    ]


def test_port_and_storage_errors_come_together(submit):
    errors = refusals(
        submit,
        document(
            portMappings=[{"containerPort": 22, "hostPort": 22}],
            storage=[{"hostPath": "/etc", "containerPath": "/etc-copy"}],
        ),
    )
    assert f"{D}.portMappings[0].hostPort" in errors
    assert any(path.startswith(f"{D}.storage") for path in errors), errors


def test_bad_port_settings_fail_the_system_check(settings):
    from clusters.apps import check_port_policy

    assert check_port_policy() == []
    settings.PORTAL_HOST_PORT_RANGE = "30000-20000"
    [error] = check_port_policy()
    assert error.id == "clusters.E001" and "30000-20000" in error.msg
    settings.PORTAL_HOST_PORT_RANGE = ""
    settings.PORTAL_REFUSED_HOST_PORTS = ["1-1023", "8000-80"]
    [error] = check_port_policy()
    assert error.id == "clusters.E001" and "8000-80" in error.msg
