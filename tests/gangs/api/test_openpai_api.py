"""OpenPAI configs posted to the REST submit endpoint and /convert: every error with its path
(nothing written), a multi-task config stored as a gang of tasks (gangs/), and a one-task
config submitted as one ordinary job with the PAI_* environment."""

import copy
import json

import pytest

from clusters.models import Cluster
from core.errors import NotAllowed
from gangs.models import JobGang
from jobs.models import Job, JobEvent
from jobs.states import JobStatus
from jobs.user_actions.registry import ACTIONS, whole_gang_actions_register
from tests.api.conftest import API, PORTAL, put_state
from tests.gangs import OPENPAI_SEED

pytestmark = pytest.mark.django_db

SEED = OPENPAI_SEED
SINGLE = {
    "jobName": "pai-single",
    "image": "gpuportal/busybox:latest",
    "dataDir": "$PAI_DEFAULT_FS_URI/datasets/cifar",
    "virtualCluster": "1",
    "taskRoles": [
        {
            "name": "main",
            "taskNumber": 1,
            "cpuNumber": 2,
            "memoryMB": 1500,
            "gpuNumber": 1,
            "portList": [{"label": "http", "beginAt": 0, "portNumber": 1}],
            "command": "echo $PAI_JOB_NAME && sleep 1",
        }
    ],
    "jobEnvs": {"epochs": 3},
    "extras": {"team": "vision"},
}


def seed_example() -> dict:
    lines = SEED.read_text().splitlines()
    doc = json.loads("\n".join(line for line in lines if not line.strip().startswith("//")))
    doc["image"] = "gpuportal/busybox:latest"
    return doc


@pytest.fixture
def nothing_written(db):
    before = (Job.objects.count(), JobEvent.objects.count())
    yield
    assert (Job.objects.count(), JobEvent.objects.count()) == before


def post(client, document, path="jobs"):
    return client.post(API + path, data=json.dumps(document), content_type="application/json")


def test_invalid_config_lists_every_error_with_its_path(member_client, slave, nothing_written):
    doc = copy.deepcopy(SINGLE)
    doc["jobName"] = "bad name"
    doc["taskRoles"].append({**doc["taskRoles"][0], "name": "second", "taskNumber": 0})
    doc["taskRoles"][0]["memoryMB"] = 99
    doc["retryCount"] = -1
    response = post(member_client, doc)
    assert response.status_code == 400
    body = response.json()
    assert body["error"] == "invalid job"
    assert body["errors"] == [
        r"jobName: must match ^[A-Za-z0-9\-._~]+$",
        "retryCount: must be >= 0",
        "taskRoles[0].memoryMB: must be >= 100",
        "taskRoles[1].taskNumber: must be >= 1",
    ]


def test_config_without_job_name_is_still_read_as_openpai(member_client, slave, nothing_written):
    doc = {k: v for k, v in SINGLE.items() if k != "jobName"}
    response = post(member_client, doc)
    assert response.status_code == 400
    assert response.json()["errors"] == ["jobName: is required"]


def test_no_kind_names_all_three(member_client, slave, nothing_written):
    response = post(member_client, {"name": "x"})
    assert response.status_code == 400
    (error,) = response.json()["errors"]
    assert '"request" (GPULab v2)' in error and '"jobDefinition" (GPULab v1)' in error
    assert '"jobName" and "taskRoles" (OpenPAI)' in error


def test_seed_example_is_accepted_as_a_gang_of_four_tasks(member_client, slave, request):
    Cluster.objects.filter(id=1).update(comment="your_virtual_cluster")
    # Its two 4-GPU workers start together: one 4-GPU slave could never hold them at once.
    refused = post(member_client, seed_example())
    assert refused.status_code == 400
    assert refused.json()["errors"] == [
        "taskRoles[1].taskNumber: the job's tasks start together and can never all fit: 2 tasks "
        "of 4 GPU(s), 2 CPU(s) and 16 GB each must run at once, but the site can place at most 1 "
        "of them at once (the slaves that could run one have 4 GPUs)"
    ]
    assert not Job.objects.exists()
    request.getfixturevalue("second_slave")
    response = post(member_client, seed_example())
    assert response.status_code == 201, response.content
    first = Job.objects.get(uuid=response.content.decode())
    gang = JobGang.objects.get(pk=first.gang_id)
    assert gang.name == "tensorflow-distributed-jobguid" and gang.status == "QUEUED"
    tasks = Job.objects.filter(gang=gang).order_by("task_role", "task_index")
    assert [(t.name, t.task_role, t.task_index, t.gpus) for t in tasks] == [
        ("tensorflow-distributed-jobguid-ps_server-0", "ps_server", 0, 0),
        ("tensorflow-distributed-jobguid-ps_server-1", "ps_server", 1, 0),
        ("tensorflow-distributed-jobguid-worker-0", "worker", 0, 4),
        ("tensorflow-distributed-jobguid-worker-1", "worker", 1, 4),
    ]
    assert all(t.status == "QUEUED" and t.request["resources"]["clusterId"] == 1 for t in tasks)
    # The gang's roles x tasks, from the portal API.
    answer = member_client.get(f"{PORTAL}gangs/{gang.uuid}/").json()
    assert answer["name"] == gang.name and answer["attempt"] == 1
    assert [r["name"] for r in answer["roles"]] == ["ps_server", "worker"]
    assert [t["name"] for t in answer["roles"][1]["tasks"]] == [
        "tensorflow-distributed-jobguid-worker-0",
        "tensorflow-distributed-jobguid-worker-1",
    ]
    assert answer["roles"][1]["tasks"][0]["state"] == "QUEUED"


def test_gang_task_errors_name_the_role(member_client, slave, nothing_written):
    doc = copy.deepcopy(SINGLE)
    doc["taskRoles"].append({**doc["taskRoles"][0], "name": "big", "gpuNumber": 64})
    doc["taskRoles"][0]["taskNumber"] = 2
    response = post(member_client, doc)
    assert response.status_code == 400, response.content
    assert response.json()["errors"] == [
        "taskRoles[1]: no registered slave can run this job: cluster 1: no slave has 64 GPUs "
        "(largest: 4 on gpu1)"
    ]


def test_acting_on_one_task_acts_on_the_gang_and_says_so(member_client, slave):
    doc = copy.deepcopy(SINGLE)
    doc["taskRoles"][0]["taskNumber"] = 3
    response = post(member_client, doc)
    assert response.status_code == 201, response.content
    first = Job.objects.get(uuid=response.content.decode())
    tasks = list(Job.objects.filter(gang_id=first.gang_id))
    answer = member_client.put(
        f"{API}jobs/{tasks[2].uuid}/state/status", data="CANCELLED", content_type="text/plain"
    )
    assert answer.status_code == 200
    assert "applied to the whole job pai-single: 3 task(s)" in answer["X-Portal-Info"]
    assert (
        sorted(Job.objects.filter(gang_id=first.gang_id).values_list("status", flat=True))
        == ["CANCELLED"] * 3
    )


def test_single_task_config_becomes_one_ordinary_job(member_client, member, slave):
    response = post(member_client, SINGLE)
    assert response.status_code == 201, response.content
    job = Job.objects.get(uuid=response.content.decode())
    assert job.name == "pai-single" and job.owner == member
    assert job.status == JobStatus.QUEUED
    resources = job.request["resources"]
    assert (resources["cpus"], resources["gpus"], resources["cpuMemoryGb"]) == (2, 1, 2)
    assert resources["clusterId"] == 1
    docker = job.request["docker"]
    assert docker["command"] == ["/bin/sh", "-c", "echo $PAI_JOB_NAME && sleep 1"]
    env = docker["environment"]
    assert env["epochs"] == 3
    assert env["PAI_JOB_NAME"] == "pai-single"
    assert env["PAI_USER_NAME"] == "alice"
    assert env["PAI_CURRENT_TASK_ROLE_NAME"] == "main"
    assert env["PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX"] == "0"
    assert env["PAI_TASK_ROLE_COUNT"] == "1"
    assert env["PAI_TASK_ROLE_LIST"] == "main"
    assert env["PAI_TASK_ROLE_TASK_COUNT_main"] == "1"
    assert env["PAI_RESOURCE_main"] == "1,2,1500,64"
    assert env["PAI_DATA_DIR"] == "/project/datasets/cifar"
    assert env["PAI_OUTPUT_DIR"] == "/project/Output/pai-single"
    assert env["PAI_PORT_LIST_main_0_http"] == "20000"
    assert docker["portMappings"] == [{"containerPort": 20000, "hostPort": None, "hostIp": None}]
    assert {m["containerPath"] for m in docker["storage"]} == {
        "/project/datasets/cifar/",
        "/project/Output/pai-single/",
    }
    # The job reads back through GPULab's own endpoint like any other...
    detail = member_client.get(API + f"jobs/{job.uuid}")
    assert detail.status_code == 200
    assert detail.json()["name"] == "pai-single"
    # ...and its OpenPAI config, extras included, through the portal's.
    config = member_client.get(PORTAL + f"jobs/{job.uuid}/openpai")
    assert config.status_code == 200
    assert config.json()["extras"] == {"team": "vision"}
    assert config.json()["taskRoles"][0]["shmMB"] == 64
    assert job.openpai_config == config.json()


def test_openpai_config_endpoint_is_for_members_and_openpai_jobs(
    member_client, outsider_client, slave, hello_world
):
    pai = post(member_client, SINGLE).content.decode()
    gpulab = post(member_client, hello_world).content.decode()
    assert member_client.get(PORTAL + f"jobs/{gpulab}/openpai").status_code == 404
    assert outsider_client.get(PORTAL + f"jobs/{pai}/openpai").status_code == 403


def test_image_credentials_are_not_stored_in_the_config(member_client, slave):
    doc = {**SINGLE, "image": "user:s3cretPW@registry.example.org:5000/team/img:1"}
    response = post(member_client, doc)
    assert response.status_code == 201, response.content
    job = Job.objects.get(uuid=response.content.decode())
    assert job.pull_secret.image == doc["image"]  # kept for the pull only
    assert "s3cretPW" not in json.dumps(job.openpai_config)
    assert "s3cretPW" not in json.dumps(job.request)


def test_job_name_unique_among_the_users_jobs_not_deleted(member_client, slave):
    first = post(member_client, SINGLE)
    assert first.status_code == 201
    job = Job.objects.get(uuid=first.content.decode())
    second = post(member_client, SINGLE)
    assert second.status_code == 400
    (error,) = second.json()["errors"]
    assert error.startswith("jobName: must be unique among your jobs that are not deleted")
    assert Job.objects.count() == 1
    put_state(job, "DELETED")
    third = post(member_client, SINGLE)
    assert third.status_code == 201, third.content


def test_uniqueness_error_comes_with_the_others(member_client, slave):
    assert post(member_client, SINGLE).status_code == 201
    doc = copy.deepcopy(SINGLE)
    doc["taskRoles"][0]["cpuNumber"] = 0
    response = post(member_client, doc)
    assert response.status_code == 400
    errors = response.json()["errors"]
    assert "taskRoles[0].cpuNumber: must be >= 1" in errors
    assert any(e.startswith("jobName: must be unique") for e in errors)


def test_another_users_job_name_does_not_clash(member_client, admin_client, admin_user, slave):
    assert post(member_client, SINGLE).status_code == 201
    doc = {**SINGLE, "owner": {"projectUrn": "vision"}}  # a GPULab client's owner key
    response = post(admin_client, doc)
    assert response.status_code == 201, response.content
    owners = set(Job.objects.filter(name="pai-single").values_list("owner__username", flat=True))
    assert owners == {"alice", admin_user.username}


@pytest.mark.parametrize(
    ("changes", "error"),
    [
        ({"virtualCluster": "99"}, "virtualCluster: no cluster with id 99"),
        ({"virtualCluster": "nope"}, "virtualCluster: no cluster named 'nope'"),
    ],
)
def test_single_task_refusals(member_client, slave, nothing_written, changes, error):
    response = post(member_client, {**SINGLE, **changes})
    assert response.status_code == 400
    (message,) = response.json()["errors"]
    assert message.startswith(error)


def test_auth_file_and_is_debug_are_accepted(member_client, slave):
    doc = {**SINGLE, "authFile": "/secrets/registry.txt", "jobEnvs": {"isDebug": True}}
    response = post(member_client, doc)
    assert response.status_code == 201, response.content
    job = Job.objects.get(uuid=response.content.decode())
    assert job.openpai_config["authFile"] == "/secrets/registry.txt"
    assert job.openpai_config["jobEnvs"] == {"isDebug": True}


def test_virtual_cluster_by_name(member_client, slave):
    response = post(member_client, {**SINGLE, "virtualCluster": "TEST cluster"})
    assert response.status_code == 201, response.content
    job = Job.objects.get(uuid=response.content.decode())
    assert job.request["resources"]["clusterId"] == 1


def test_slave_checks_name_openpai_fields(member_client, slave, nothing_written):
    doc = copy.deepcopy(SINGLE)
    doc["taskRoles"][0]["gpuNumber"] = 64  # no slave has 64 GPUs
    response = post(member_client, doc)
    assert response.status_code == 400, response.content
    errors = response.json()["errors"]
    assert errors and all(not e.startswith("request.") for e in errors), errors
    assert errors == [
        "taskRoles[0]: no registered slave can run this job: cluster 1: no slave has 64 GPUs "
        "(largest: 4 on gpu1)"
    ]


def test_convert_answers_the_canonical_config(member_client):
    response = member_client.post(
        PORTAL + "convert", data=json.dumps(seed_example()), content_type="application/json"
    )
    assert response.status_code == 200, response.content
    assert response["X-Converted-From"] == "openpai"
    config = response.json()
    assert config["taskRoles"][0]["shmMB"] == 64
    assert config["extras"] == {}
    bad = member_client.post(
        PORTAL + "convert",
        data=json.dumps({**SINGLE, "taskRoles": []}),
        content_type="application/json",
    )
    assert bad.status_code == 400
    assert bad.json()["errors"] == ["taskRoles: must contain at least one task role"]


def test_single_task_problems_come_all_at_once(member_client, slave):
    assert post(member_client, SINGLE).status_code == 201
    doc = {**SINGLE, "retryCount": 0, "virtualCluster": "7"}
    response = post(member_client, doc)
    assert response.status_code == 400
    errors = response.json()["errors"]
    assert [e.split(":")[0] for e in errors] == ["jobName", "virtualCluster"]
    assert Job.objects.count() == 1


def test_a_gang_name_clashes_like_a_job_name(member_client, slave):
    doc = copy.deepcopy(SINGLE)
    doc["taskRoles"][0]["taskNumber"] = 3
    assert post(member_client, doc).status_code == 201
    errors = post(member_client, SINGLE).json()["errors"]
    assert len(errors) == 1 and errors[0].startswith("jobName: must be unique")


def _gang_of(member_client, tasks: int) -> list[Job]:
    doc = copy.deepcopy(SINGLE)
    doc["taskRoles"][0]["taskNumber"] = tasks
    response = post(member_client, doc)
    assert response.status_code == 201, response.content
    first = Job.objects.get(uuid=response.content.decode())
    return list(Job.objects.filter(gang_id=first.gang_id).order_by("task_index"))


def test_deleting_one_task_deletes_the_gang_and_a_real_delete_removes_one_row(
    member_client, admin_client, slave
):
    # gpulab-cli rm of a waiting task: through the action registry, the whole gang.
    tasks = _gang_of(member_client, 2)
    answer = member_client.delete(f"{API}jobs/{tasks[1].uuid}")
    assert answer.status_code == 204, answer.content
    assert "deleted the whole job pai-single: 2 task(s)" in answer["X-Portal-Info"]
    statuses = Job.objects.filter(gang_id=tasks[0].gang_id).values_list("status", flat=True)
    assert sorted(statuses) == [JobStatus.DELETED] * 2
    # An admin's real delete removes that task's row only, and says nothing of the gang.
    answer = admin_client.delete(f"{API}jobs/{tasks[0].uuid}?real=true")
    assert answer.status_code == 204, answer.content
    assert "X-Portal-Info" not in answer
    remaining = Job.objects.filter(gang_id=tasks[0].gang_id).values_list("pk", flat=True)
    assert list(remaining) == [tasks[1].pk]


def test_the_registry_checks_permission_before_acting_on_a_gang(member_client, outsider, slave):
    tasks = _gang_of(member_client, 2)
    with pytest.raises(NotAllowed):
        ACTIONS["cancel"].run(job=tasks[0], user=outsider, reason="not mine")
    gang = JobGang.objects.get(pk=tasks[0].gang_id)
    assert not gang.cancelled_by_user
    assert set(Job.objects.filter(gang=gang).values_list("status", flat=True)) == {JobStatus.QUEUED}


def test_a_cancel_with_a_reason_cancels_the_whole_gang(member_client, member, slave):
    """Tapis' cancelJob passes a reason through the registry, as any caller may."""
    tasks = _gang_of(member_client, 2)
    ACTIONS["cancel"].run(job=tasks[1], user=member, reason="Tapis cancelJob")
    gang = JobGang.objects.get(pk=tasks[0].gang_id)
    assert gang.cancelled_by_user
    assert gang.end_reason == f"cancelled by {member.username}: Tapis cancelJob"
    statuses = Job.objects.filter(gang=gang).values_list("status", flat=True)
    assert set(statuses) == {JobStatus.CANCELLED}


def test_whole_gang_actions_name_actions_of_the_registry():
    with pytest.raises(ValueError, match="no such job action: launch"):
        whole_gang_actions_register(services={"launch": print}, info=str)
