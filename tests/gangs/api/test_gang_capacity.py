"""A gang that the site could never place at once is refused at submit with the numbers (issue
27 item 2): its tasks, the GPUs each needs, and the most of them the site can place at once."""

import json

import pytest

from clusters.models import Gpu
from jobs.models import Job
from tests.api.conftest import API

pytestmark = pytest.mark.django_db


def gang(tasks: int, gpus: int) -> dict:
    return {
        "jobName": "toobig",
        "image": "gpuportal/busybox:latest",
        "taskRoles": [
            {
                "name": "worker",
                "taskNumber": tasks,
                "cpuNumber": 1,
                "memoryMB": 1024,
                "gpuNumber": gpus,
                "command": "sleep 1",
            }
        ],
    }


@pytest.fixture
def six_gpu_site(slave, second_slave):
    """4 GPUs on gpu1 and 2 on gpu2: 6 GPUs, room for 3 two-GPU tasks at once."""
    Gpu.objects.filter(slave=second_slave, index__gte=2).delete()
    return slave, second_slave


def test_ten_two_gpu_tasks_on_a_six_gpu_site_are_refused_with_the_numbers(
    member_client, six_gpu_site
):
    response = member_client.post(
        API + "jobs", data=json.dumps(gang(10, 2)), content_type="application/json"
    )
    assert response.status_code == 400, response.content
    assert response.json()["errors"] == [
        "taskRoles[0].taskNumber: the job's tasks start together and can never all fit: "
        "10 tasks of 2 GPU(s), 1 CPU(s) and 1 GB each must run at once, but the site can place "
        "at most 3 of them at once (the slaves that could run one have 6 GPUs)"
    ]
    assert not Job.objects.exists()
    # Three fit: accepted.
    ok = member_client.post(
        API + "jobs", data=json.dumps(gang(3, 2)), content_type="application/json"
    )
    assert ok.status_code == 201, ok.content
