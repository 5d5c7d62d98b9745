"""The job page of a task of a multi-task OpenPAI job shows its gang: roles x tasks (state,
slave, ports, exit code) and the attempts; an action on the task says it acted on all."""

import pytest

from gangs.models import JobGang
from jobs.models import Job
from jobs.user_actions.services import job_submit

pytestmark = pytest.mark.django_db

CONFIG = {
    "jobName": "pai-page-gang",
    "image": "gpuportal/busybox:latest",
    "retryCount": 1,
    "taskRoles": [
        {"name": "ps", "taskNumber": 1, "cpuNumber": 1, "memoryMB": 512, "gpuNumber": 0,
         "command": "sleep 60"},
        {"name": "worker", "taskNumber": 2, "cpuNumber": 1, "memoryMB": 512, "gpuNumber": 1,
         "command": "sleep 60"},
    ],
}  # fmt: skip


@pytest.fixture
def gang_task(member, project, slave, settings):
    settings.PORTAL_TASK_MODE = "record"  # no tick, no launch: the tasks stay queued
    first = job_submit(user=member, project=project, document=CONFIG)
    gang = JobGang.objects.get(pk=first.gang_id)
    gang.attempts = [
        {"attempt": 0, "status": "FAILED", "reason": "1 task(s) of role worker failed",
         "ended": "2026-01-01T00:00:00Z", "tasks": []}
    ]  # fmt: skip
    gang.save(update_fields=["attempts"])
    return Job.objects.get(gang=gang, task_role="worker", task_index=1)


def test_task_page_shows_the_gang(member_client, gang_task):
    html = member_client.get(f"/jobs/{gang_task.uuid}/").content.decode()
    assert 'id="gang-tasks"' in html and "OpenPAI job pai-page-gang" in html
    for name in ("ps-0", "worker-0", "worker-1"):
        assert f">{name}</a>" in html
    assert 'class="table-active" aria-current="true"' in html
    assert "attempt 0: FAILED" in html and "attempt 1 of 2" in html


def test_cancel_from_the_page_cancels_every_task(member_client, gang_task):
    response = member_client.post(
        f"/jobs/{gang_task.uuid}/cancel/", {"confirmed": "1"}, follow=True
    )
    assert response.status_code == 200
    assert any(
        "the whole job pai-page-gang: 3 task(s)" in str(m) for m in response.context["messages"]
    )
    statuses = set(Job.objects.filter(gang_id=gang_task.gang_id).values_list("status", flat=True))
    assert statuses == {"CANCELLED"}
