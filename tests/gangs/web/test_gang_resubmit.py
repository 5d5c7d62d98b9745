"""Resubmit a multi-task OpenPAI job as a copy: POST /api/portal/gangs/<id>/resubmit and the
button of the job page's gang section (gangs/resubmit.py, docs/openpai.md)."""

import json

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from gangs.models import JobGang
from jobs.models import Job, JobEvent, JobPullSecret, JobShare
from jobs.user_actions.services import job_submit
from tests.api.conftest import SECRET_IMAGE

pytestmark = pytest.mark.django_db

CONFIG = {
    "jobName": "pai-copy-me",
    "image": "gpuportal/busybox:latest",
    "retryCount": 1,
    "extras": {"note": "kept"},
    "taskRoles": [
        {"name": "ps", "taskNumber": 1, "cpuNumber": 1, "memoryMB": 512, "gpuNumber": 0,
         "command": "sleep 60"},
        {"name": "worker", "taskNumber": 2, "cpuNumber": 1, "memoryMB": 512, "gpuNumber": 1,
         "command": "sleep 60"},
    ],
}  # fmt: skip


@pytest.fixture
def first(member, project, slave, settings):
    settings.PORTAL_TASK_MODE = "record"  # no tick, no launch: the tasks stay queued
    return job_submit(user=member, project=project, document=CONFIG)


def _api(user):
    client = APIClient()
    client.force_authenticate(user)
    return client


def _resubmit(user, gang_id, body=None):
    return _api(user).post(
        f"/api/portal/gangs/{gang_id}/resubmit",
        data=json.dumps(body) if body is not None else "",
        content_type="application/json",
    )


def test_api_resubmits_a_copy_linked_both_ways(member, first):
    old = JobGang.objects.get(pk=first.gang_id)
    response = _resubmit(member, old.uuid)
    assert response.status_code == 201, response.content
    body = response.json()
    copy = JobGang.objects.get(uuid=body["uuid"])
    assert Job.objects.get(uuid=body["firstTask"]).gang_id == copy.pk
    assert copy.pk != old.pk and copy.copy_of_id == old.pk
    assert body["name"] == "pai-copy-me-copy" and copy.name == "pai-copy-me-copy"
    assert body["copyOf"]["uuid"] == str(old.uuid)
    assert body["copyOf"]["firstTask"] == str(first.uuid)
    assert copy.config == {**old.config, "jobName": "pai-copy-me-copy"}
    assert copy.retry_count == 1 and copy.attempt == 1
    tasks = Job.objects.filter(gang=copy).order_by("task_role", "task_index")
    assert [(t.task_role, t.task_index, t.status) for t in tasks] == [
        ("ps", 0, "QUEUED"), ("worker", 0, "QUEUED"), ("worker", 1, "QUEUED"),
    ]  # fmt: skip
    assert [t.name for t in tasks][0] == "pai-copy-me-copy-ps-0"
    # The old job is untouched and names its copy; both histories say so.
    assert set(Job.objects.filter(gang=old).values_list("status", flat=True)) == {"QUEUED"}
    old_view = _api(member).get(f"/api/portal/gangs/{old.uuid}/").json()
    assert [c["name"] for c in old_view["copies"]] == ["pai-copy-me-copy"]
    assert JobEvent.objects.filter(
        job__uuid=body["firstTask"],
        message=f"resubmitted as a copy of OpenPAI job pai-copy-me ({old.uuid})",
    ).exists()
    assert JobEvent.objects.filter(
        job=first, message="resubmitted as a copy: OpenPAI job pai-copy-me-copy"
    ).exists()
    # A second copy of the same job gets the next free name; a name may be given.
    assert _resubmit(member, first.uuid).json()["name"] == "pai-copy-me-copy2"
    assert _resubmit(member, old.uuid, {"jobName": "mine.v3"}).json()["name"] == "mine.v3"


def test_api_refuses_bad_options_naming_them(member, first):
    response = _resubmit(member, first.uuid, {"jobName": 3, "colour": "red"})
    assert response.status_code == 400
    text = response.content.decode()
    assert "jobName: must be a string" in text and "colour: is not a known key" in text
    taken = _resubmit(member, first.uuid, {"jobName": "pai-copy-me"})
    assert taken.status_code == 400 and "jobName" in taken.content.decode()
    assert JobGang.objects.count() == 1


def test_refused_for_who_may_not_submit_to_the_project(member, outsider, first):
    # A stranger sees the job only sanitised: not its tasks, and no copy.
    assert _resubmit(outsider, first.uuid).status_code == 403
    # Shared with them, they see it in full, but may not submit to its project.
    JobShare.objects.create(
        job=first, grantee_user=outsider, created_by=member, created=timezone.now()
    )
    assert _api(outsider).get(f"/api/portal/gangs/{first.uuid}/").status_code == 200
    assert _resubmit(outsider, first.uuid).status_code == 403
    assert JobGang.objects.count() == 1


def test_the_copy_pulls_with_the_credentials_never_shown(member, project, slave, settings):
    settings.PORTAL_TASK_MODE = "record"
    task = job_submit(user=member, project=project, document={**CONFIG, "image": SECRET_IMAGE})
    response = _resubmit(member, task.uuid)
    assert response.status_code == 201
    assert b"s3cretPW" not in response.content
    copy_first = Job.objects.get(uuid=response.json()["firstTask"])
    assert JobPullSecret.objects.get(job=copy_first).image == SECRET_IMAGE
    assert "s3cretPW" not in json.dumps(copy_first.gang.config)


def test_page_button_resubmits_and_links(member_client, client_of, outsider, member, first):
    html = member_client.get(f"/jobs/{first.uuid}/").content.decode()
    assert 'id="gang-resubmit"' in html
    response = member_client.post(f"/jobs/{first.uuid}/gang/resubmit/", follow=True)
    copy = JobGang.objects.get(name="pai-copy-me-copy")
    copy_first = Job.objects.filter(gang=copy).order_by("id").first()
    assert response.redirect_chain[-1][0] == f"/jobs/{copy_first.uuid}/"
    page = response.content.decode()
    assert "Resubmitted as a copy: OpenPAI job pai-copy-me-copy." in page
    assert f'Copy of <a href="/jobs/{first.uuid}/">pai-copy-me</a>' in page
    old_page = member_client.get(f"/jobs/{first.uuid}/").content.decode()
    assert f'Resubmitted as <a href="/jobs/{copy_first.uuid}/">pai-copy-me-copy</a>' in old_page
    # Shared read-only with a non-member: no button, and a post is refused.
    JobShare.objects.create(
        job=first, grantee_user=outsider, created_by=member, created=timezone.now()
    )
    outsider_client = client_of(outsider)
    assert 'id="gang-resubmit"' not in outsider_client.get(f"/jobs/{first.uuid}/").content.decode()
    refused = outsider_client.post(f"/jobs/{first.uuid}/gang/resubmit/", follow=True)
    assert "Resubmit failed" in refused.content.decode()
    assert JobGang.objects.count() == 2
