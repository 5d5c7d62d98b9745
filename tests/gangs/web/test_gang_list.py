"""A multi-task OpenPAI job is one row of the web's jobs list (with its task counts, linking to
its first task); the GPULab API keeps listing every task. Live > Slaves names the gang task
holding each GPU."""

import pytest
from rest_framework.test import APIClient

from jobs.models import Job
from jobs.user_actions.services import job_submit

pytestmark = pytest.mark.django_db

CONFIG = {
    "jobName": "pai-list-gang",
    "image": "gpuportal/busybox:latest",
    "taskRoles": [
        {"name": "ps", "taskNumber": 1, "cpuNumber": 1, "memoryMB": 512, "gpuNumber": 0,
         "command": "sleep 60"},
        {"name": "worker", "taskNumber": 3, "cpuNumber": 1, "memoryMB": 512, "gpuNumber": 1,
         "command": "sleep 60"},
    ],
}  # fmt: skip

SINGLE = {
    "request": {
        "resources": {"cpus": 1, "gpus": 0, "cpuMemoryGb": 1},
        "docker": {"image": "gpuportal/busybox:latest", "command": "true"},
    },
    "name": "plain-job",
}


@pytest.fixture
def gang_first(member, project, slave, settings):
    settings.PORTAL_TASK_MODE = "record"  # no tick, no launch: the tasks stay queued
    return job_submit(user=member, project=project, document=CONFIG)


def _running(task, slave, gpus):
    # Fixture data: a task the scheduler placed (the test does not run a tick).
    Job.objects.filter(pk=task.pk).update(status="RUNNING", slave=slave, gpu_ids=gpus)


def test_gang_is_one_row_with_task_counts(member_client, gang_first, slave):
    tasks = list(Job.objects.filter(gang_id=gang_first.gang_id).order_by("id"))
    assert len(tasks) == 4 and tasks[0].pk == gang_first.pk
    assert {task.array_id for task in tasks} == {None}  # the gang groups them, not a sweep
    _running(tasks[1], slave, [0])
    _running(tasks[2], slave, [1])
    Job.objects.filter(pk=tasks[3].pk).update(status="FINISHED", exit_code=0)
    html = member_client.get("/jobs/").content.decode()
    assert html.count('data-gang="') == 1
    assert "4 tasks: 2 running, 1 queued, 1 done" in html
    assert f'href="/jobs/{gang_first.uuid}/"' in html
    assert ">pai-list-gang</a>" in html
    for task in tasks[1:]:
        assert f'data-job="{task.uuid}"' not in html
    assert f'data-job="{gang_first.uuid}"' in html


def test_plain_jobs_stay_rows_beside_a_gang(member_client, member, project, gang_first):
    plain = job_submit(user=member, project=project, document=SINGLE)
    html = member_client.get("/jobs/").content.decode()
    assert f'data-job="{plain.uuid}"' in html and f'data-job="{gang_first.uuid}"' in html
    assert "2 jobs" in html


def test_gpulab_api_lists_every_task(member, gang_first):
    client = APIClient()
    client.force_authenticate(member)
    body = client.get("/api/gpulab/v4.0/jobs").content.decode()
    for task in Job.objects.filter(gang_id=gang_first.gang_id):
        assert str(task.uuid) in body


def test_live_slaves_names_the_gang_task_on_each_gpu(
    member_client, outsider_client, gang_first, slave
):
    worker = Job.objects.get(gang_id=gang_first.gang_id, task_role="worker", task_index=2)
    _running(worker, slave, [3])
    html = member_client.get("/live/slaves/").content.decode()
    label = "gang pai-list-gang, role worker, task 2"
    assert f'data-gang-task="{label}"' in html
    assert f'GPU 3: <a href="/jobs/{worker.uuid}/">{label}</a>' in html
    # Who does not see the job in full does not see its name, role or index either.
    assert "pai-list-gang" not in outsider_client.get("/live/slaves/").content.decode()
