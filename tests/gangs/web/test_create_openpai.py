"""Create Job with an OpenPAI config: pasted or uploaded, shown as its task roles, every error
with its path, a multi-task config submitted as one job of many tasks, and a one-task config
submitted as one job."""

import copy
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from jobs.models import Job
from tests.gangs import OPENPAI_SEED

SEED = OPENPAI_SEED
SINGLE = {
    "jobName": "pai-page",
    "image": "gpuportal/busybox:latest",
    "taskRoles": [
        {"name": "main", "taskNumber": 1, "cpuNumber": 1, "memoryMB": 512, "gpuNumber": 0,
         "command": "echo hi"}
    ],
}  # fmt: skip


def seed_example() -> dict:
    lines = SEED.read_text().splitlines()
    doc = json.loads("\n".join(line for line in lines if not line.strip().startswith("//")))
    doc["image"] = "gpuportal/busybox:latest"
    return doc


@pytest.fixture
def create(member_client, project, slave):
    def do(document, **extra):
        data = {"project": str(project.pk), "document": json.dumps(document), **extra}
        return member_client.post("/jobs/new/", data)

    return do


def test_single_task_config_submits_one_job(create, member_client):
    response = create(SINGLE, hold="0")
    job = Job.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/jobs/{job.uuid}/"
    assert job.name == "pai-page" and job.status == "QUEUED"
    assert job.request["docker"]["environment"]["PAI_CURRENT_TASK_ROLE_NAME"] == "main"
    follow = member_client.get(response["Location"])
    assert [str(m) for m in follow.context["messages"]] == [
        "OpenPAI job pai-page submitted: one task of task role main, as one job: queued."
    ]


def test_seed_example_is_submitted_as_a_gang(create, cluster, second_slave):
    """Its two 4-GPU workers start together: they need two 4-GPU slaves."""
    cluster.comment = "your_virtual_cluster"
    cluster.save(update_fields=["comment"])
    response = create(seed_example(), hold="0")
    assert response.status_code == 302
    assert Job.objects.filter(gang__name="tensorflow-distributed-jobguid").count() == 4


def test_seed_example_is_shown_as_its_task_roles_when_refused(create):
    response = create(seed_example(), hold="0")  # no cluster is named your_virtual_cluster
    assert response.status_code == 400
    assert not Job.objects.exists()
    assert [e["path"] for e in response.context["errors"]] == ["virtualCluster"]
    roles = response.context["document_summary"]["taskRoles"]
    assert [(r["name"], r["taskNumber"], r["gpuNumber"]) for r in roles] == [
        ("ps_server", 2, 0),
        ("worker", 2, 4),
    ]
    html = response.content.decode()
    assert 'id="openpai-roles"' in html and '<td class="text-nowrap">ps_server</td>' in html
    assert "Several tasks: they run as one job" in html


def test_invalid_config_shows_every_error_with_its_path(create):
    doc = copy.deepcopy(SINGLE)
    doc["taskRoles"][0]["memoryMB"] = 10
    doc["taskRoles"][0]["command"] = ""
    response = create(doc, hold="0")
    assert response.status_code == 400
    assert not Job.objects.exists()
    assert [(e["path"], e["message"]) for e in response.context["errors"]] == [
        ("taskRoles[0].memoryMB", "must be >= 100"),
        ("taskRoles[0].command", "must not be empty"),
    ]


def test_uploaded_config_is_read_and_submitted(member_client, project, slave):
    upload = SimpleUploadedFile("job.json", json.dumps(SINGLE).encode(), "application/json")
    data = {"project": str(project.pk), "document": "", "hold": "1", "document_file": upload}
    response = member_client.post("/jobs/new/", data)
    assert response.status_code == 302, response.content[:500]
    job = Job.objects.get()
    assert job.name == "pai-page" and job.status == "ONHOLD"


def test_uploaded_seed_example_shows_roles(member_client, project, slave):
    text = json.dumps(seed_example()).encode()
    upload = SimpleUploadedFile("pai.json", text, "application/json")
    data = {"project": str(project.pk), "document": "{}", "hold": "0", "document_file": upload}
    response = member_client.post("/jobs/new/", data)
    assert response.status_code == 400
    assert len(response.context["document_summary"]["taskRoles"]) == 2
    assert json.loads(response.context["form"]["document"].value()) == seed_example()


def test_upload_must_be_utf8(member_client, project, slave):
    upload = SimpleUploadedFile("job.json", b'{"jobName": "\xff"}', "application/json")
    data = {"project": str(project.pk), "document": "", "document_file": upload}
    response = member_client.post("/jobs/new/", data)
    assert response.status_code == 400
    assert "not UTF-8" in response.content.decode()
    assert not Job.objects.exists()


def test_apply_fields_leaves_an_openpai_config_alone(create):
    response = create(SINGLE, apply_fields="1", name="renamed", gpus="2")
    assert response.status_code == 200
    assert any("OpenPAI job config" in note for note in response.context["notices"])
    assert json.loads(response.context["form"]["document"].value()) == SINGLE


def convert(client, text):
    return client.post("/jobs/new/convert", {"document": text}).json()


def test_convert_reads_an_openpai_config(member_client):
    answer = convert(member_client, json.dumps(seed_example()))
    assert answer["ok"] and answer["kind"] == "openpai" and answer["runnable"] is False
    assert [r["name"] for r in answer["taskRoles"]] == ["ps_server", "worker"]
    assert "runs as one job of 4 task(s), started together" in answer["notice"]
    assert json.loads(answer["document"])["taskRoles"][0]["shmMB"] == 64

    single = convert(member_client, json.dumps(SINGLE))
    assert single["ok"] and single["runnable"] is True

    bad = convert(member_client, json.dumps({**SINGLE, "retryCount": -1}))
    assert not bad["ok"] and bad["kind"] == "openpai"
    assert [(e["path"], e["message"]) for e in bad["errors"]] == [("retryCount", "must be >= 0")]


def test_clone_of_an_openpai_job_gives_back_its_config(create, member_client):
    assert create(SINGLE, hold="1").status_code == 302
    job = Job.objects.get()
    response = member_client.get(f"/jobs/new/?clone={job.uuid}")
    assert response.status_code == 200
    doc = json.loads(response.context["form"]["document"].value())
    assert doc == job.openpai_config and doc["jobName"] == "pai-page"
    assert [r["name"] for r in response.context["document_summary"]["taskRoles"]] == ["main"]
