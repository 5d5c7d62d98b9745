"""The Create Job page's message after submitting a multi-task OpenPAI config (issue 27 item 5):
it says what was submitted (the job's name, its task roles and tasks, started together), on the
page the form goes to, and not again on a later page."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from jobs.models import Job

pytestmark = pytest.mark.django_db

TWO_BY_TWO = {
    "jobName": "pai-two-by-two",
    "image": "gpuportal/busybox:latest",
    "taskRoles": [
        {"name": "ps", "taskNumber": 2, "cpuNumber": 1, "memoryMB": 512, "gpuNumber": 0,
         "command": "sleep 1"},
        {"name": "worker", "taskNumber": 2, "cpuNumber": 1, "memoryMB": 512, "gpuNumber": 1,
         "command": "sleep 1"},
    ],
}  # fmt: skip


def texts(response) -> list[str]:
    return [str(m) for m in response.context["messages"]]


def test_uploaded_two_roles_of_two_tasks_are_named_once(member_client, project, slave):
    upload = SimpleUploadedFile("pai.json", json.dumps(TWO_BY_TWO).encode(), "application/json")
    response = member_client.post(
        "/jobs/new/", {"project": str(project.pk), "document": "", "document_file": upload}
    )
    assert response.status_code == 302, response.content
    first = Job.objects.get(uuid=response["Location"].split("/")[2])
    assert first.gang is not None and first.gang.name == "pai-two-by-two"
    page = member_client.get(response["Location"])
    assert texts(page) == [
        "OpenPAI job pai-two-by-two submitted: 4 tasks in 2 task roles (ps ×2, worker ×2), "
        "started together: queued."
    ]
    assert "one task" not in page.content.decode()
    for later in ("/jobs/", response["Location"], "/"):
        assert texts(member_client.get(later)) == [], later
