"""OpenPAI's REST API (issue 27 item 4) driven with OpenPAI's own examples: the seed's JSON config
on ``POST /api/v1/jobs``, the job protocol's examples (OpenPAI's hello world and the protocol's
own composite example) on ``POST /api/v2/jobs``, then ``GET /api/v2/jobs``, ``GET
/api/v2/jobs/{user}~{jobName}`` with OpenPAI's states and retries, and ``PUT
.../executionType`` to stop. Every answer is checked against OpenPAI's published API spec
(tests/gangs/fixtures/openpai-rest-api-jobs.json: its swagger.yaml's schemas) and every refusal
has OpenPAI's ``{"code", "message"}``.

No OpenPAI client installs from PyPI (``openpaisdk`` has no release there), so the calls are
the spec's: ``Authorization: Bearer <token>``, YAML bodies as ``text/yaml``."""

import copy
import json
from pathlib import Path

import jsonschema
import pytest
from rest_framework.test import APIClient

from accounts.tokens import api_token_rotate
from clusters.models import Cluster
from gangs.completion import gang_update
from gangs.models import JobGang
from jobs.models import Job
from jobs.states import JobStatus
from tests.api.conftest import put_state
from tests.gangs import OPENPAI_SEED

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).parents[1] / "fixtures"
HELLO = (FIXTURES / "openpai-hello-world-job.yaml").read_text()
PROTOCOL_EXAMPLE = (FIXTURES / "openpai-protocol-example.yaml").read_text()
SPEC = json.loads((FIXTURES / "openpai-rest-api-jobs.json").read_text())
V1, V2 = "/api/v1/jobs", "/api/v2/jobs"


def openapi30_to_jsonschema(node):
    """OpenAPI 3.0's ``nullable: true`` as JSON Schema's ``null`` type; ``$ref`` to the spec's
    own schemas resolved."""
    if isinstance(node, list):
        return [openapi30_to_jsonschema(item) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        return openapi30_to_jsonschema(SPEC["schemas"][node["$ref"].rsplit("/", 1)[1]])
    out = {k: openapi30_to_jsonschema(v) for k, v in node.items() if k != "nullable"}
    if node.get("nullable"):
        out["type"] = [node["type"], "null"] if "type" in node else None
        if "enum" in out:
            out["enum"] = [*out["enum"], None]
    return out


def conforms(answer, schema_name: str) -> None:
    jsonschema.validate(answer, openapi30_to_jsonschema(SPEC["schemas"][schema_name]))


def seed_example() -> dict:
    lines = OPENPAI_SEED.read_text().splitlines()
    doc = json.loads("\n".join(line for line in lines if not line.strip().startswith("//")))
    doc["image"] = "gpuportal/busybox:latest"
    return doc


@pytest.fixture
def pai(member):
    """OpenPAI's client: the portal API token as OpenPAI's bearer token."""
    _, key = api_token_rotate(user=member)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return client


def post_yaml(client, text: str):
    return client.post(V2, data=text.encode(), content_type="text/yaml")


def refusal(response, status: int, code: str) -> dict:
    assert response.status_code == status, response.content
    body = response.json()
    conforms(body, "Response")
    assert body["code"] == code, body
    return body


def test_seed_config_on_v1_then_read_back_with_openpai_states(pai, member, slave, second_slave):
    Cluster.objects.filter(id=1).update(comment="your_virtual_cluster")
    response = pai.post(V1, data=json.dumps(seed_example()), content_type="application/json")
    assert response.status_code == 202, response.content
    name = "tensorflow-distributed-jobguid"
    assert response.json()["message"] == f"update job {name} successfully"
    conforms(response.json(), "Response")
    assert response["Location"].endswith(f"{V2}/alice~{name}")
    listed = pai.get(V2)
    assert listed.status_code == 200
    conforms(listed.json(), "JobSummary")
    (summary,) = listed.json()
    assert (summary["name"], summary["username"], summary["state"]) == (name, "alice", "WAITING")
    assert (summary["totalTaskNumber"], summary["totalGpuNumber"], summary["retries"]) == (4, 8, 0)
    assert summary["virtualCluster"] == "your_virtual_cluster"
    detail = pai.get(f"{V2}/alice~{name}")
    assert detail.status_code == 200
    conforms(detail.json(), "JobDetail")
    roles = detail.json()["taskRoles"]
    assert list(roles) == ["ps_server", "worker"]
    assert [t["taskState"] for t in roles["worker"]["taskStatuses"]] == ["WAITING", "WAITING"]
    # Running tasks: RUNNING, each task's ports by its portList label.
    for task in Job.objects.filter(gang__name=name):
        put_state(task, "RUNNING", slave=slave)
    detail = pai.get(f"{V2}/alice~{name}").json()
    assert detail["jobStatus"]["state"] == "RUNNING"
    assert set(detail["taskRoles"]["ps_server"]["taskStatuses"][0]["containerPorts"]) == {
        "http",
        "ssh",
    }
    total = pai.get(V2, {"withTotalCount": "true"}).json()
    conforms(total, "JobSummaryWithTotalCount")
    assert total["totalCount"] == 1


def test_hello_world_protocol_runs_as_one_job(pai, slave):
    response = post_yaml(pai, HELLO)
    assert response.status_code == 202, response.content
    job = Job.objects.get(uuid=response.json()["uuid"])
    assert job.gang is None and job.name == "hello-world-job"
    config = job.openpai_config
    assert config["image"] == "openpai/standard:python_3.6-tensorflow_1.15.0-gpu"
    assert config["virtualCluster"] is None  # OpenPAI's "default" VC: any cluster
    # minSucceededInstances -1: "when every task completed"; minFailedInstances 1.
    (role,) = config["taskRoles"]
    assert (role["minFailedTaskCount"], role["minSucceededTaskCount"]) == (1, None)
    assert role["command"].splitlines()[0] == "git clone https://github.com/tensorflow/models"
    assert config["extras"]["com.microsoft.pai.runtimeplugin"][0]["plugin"] == "ssh"
    detail = pai.get(f"{V2}/alice~hello-world-job")
    conforms(detail.json(), "JobDetail")
    assert detail.json()["jobStatus"]["state"] == "WAITING"
    put_state(job, "FINISHED", slave=slave, exit_code=0)
    detail = pai.get(f"{V2}/alice~hello-world-job").json()
    assert (detail["jobStatus"]["state"], detail["jobStatus"]["appExitCode"]) == ("SUCCEEDED", 0)


def test_the_protocols_own_example_renders_parameters_and_deployment(
    pai, slave, second_slave, settings
):
    settings.PORTAL_ALLOWED_PRIVATE_REGISTRIES = ["openpai.azurecr.io"]
    response = post_yaml(pai, PROTOCOL_EXAMPLE)
    assert response.status_code == 202, response.content
    gang = JobGang.objects.get(name="tensorflow_distributed_training")
    worker, ps = gang.config["taskRoles"]
    lines = worker["command"].splitlines()
    # The default deployment's preCommands first, then the role's commands, rendered.
    assert lines[0] == (
        "wget https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz -P data_cifar10"
    )
    assert "<% $secrets.github_token %>@github.com/MaggieQi/benchmarks" in lines[1]
    assert lines[2] == "cd script_tensorflow_cnnbenchmarks/scripts/tf_cnn_benchmarks"
    assert "--model=resnet20 --batch_size=32" in lines[3]
    assert ps["command"].splitlines()[-1] == (
        "hdfs dfs -cp output_tensorflow_cifar10_model hdfs://10.151.40.179:9000/core/cifar10_model"
    )
    assert (worker["minSucceededTaskCount"], ps["minSucceededTaskCount"]) == (1, None)
    assert (worker["shmMB"], [p["label"] for p in worker["portList"]]) == (64, ["ssh", "http"])
    assert gang.retry_count == 1
    # The image's password (a secret) is used for the pull only, never stored.
    assert "password" not in json.dumps(gang.config)
    assert gang.config["image"].endswith("@openpai.azurecr.io/openpai/pai.example.tensorflow")


def test_retries_and_stop_as_openpai_shows_them(pai, member, slave, second_slave):
    doc = copy.deepcopy(seed_example())
    doc.update(jobName="retrying", retryCount=1, virtualCluster=None)
    assert pai.post(V1, data=json.dumps(doc), content_type="application/json").status_code == 202
    gang = JobGang.objects.get(name="retrying")
    tasks = list(Job.objects.filter(gang=gang).order_by("task_role", "task_index"))
    put_state(tasks[2], "FAILED", slave=slave, exit_code=3)
    gang_update(gang_id=gang.pk)  # the first attempt fails; retryCount 1 runs a second
    detail = pai.get(f"{V2}/alice~retrying").json()
    conforms(detail, "JobDetail")
    status = detail["jobStatus"]
    assert (status["state"], status["retries"], status["attemptId"]) == ("WAITING", 1, 1)
    assert status["retryDetails"] == {"user": 1, "platform": 0, "resource": 0}
    (ended,) = detail["attempts"]
    assert (ended["attemptId"], ended["attemptState"]) == (0, "FAILED")
    assert [t["taskState"] for t in ended["tasks"]] == ["STOPPED", "STOPPED", "FAILED", "STOPPED"]
    # Stop it: every task of the current attempt, never retried again.
    stop = pai.put(
        f"{V2}/alice~retrying/executionType",
        data=json.dumps({"value": "STOP"}),
        content_type="application/json",
    )
    assert stop.status_code == 202, stop.content
    assert stop.json() == {"message": "execute job retrying successfully"}
    status = pai.get(f"{V2}/alice~retrying").json()["jobStatus"]
    assert (status["state"], status["executionType"]) in {("STOPPING", "STOP"), ("STOPPED", "STOP")}
    gang_update(gang_id=gang.pk)  # what the queue's gang_update does (tasks only recorded here)
    status = pai.get(f"{V2}/alice~retrying").json()["jobStatus"]
    assert (status["state"], status["executionType"]) == ("STOPPED", "STOP")
    gang.refresh_from_db()
    assert gang.status == JobStatus.CANCELLED and gang.cancelled_by_user
    # Stopping again is no error; starting a stopped job is refused.
    again = pai.put(
        f"{V2}/alice~retrying/executionType",
        data=json.dumps({"value": "STOP"}),
        content_type="application/json",
    )
    assert again.status_code == 202
    start = pai.put(
        f"{V2}/alice~retrying/executionType",
        data=json.dumps({"value": "START"}),
        content_type="application/json",
    )
    refusal(start, 400, "InvalidParametersError")
    listed = pai.get(V2, {"state": "STOPPED"}).json()
    assert [item["name"] for item in listed] == ["retrying"]


def test_refusals_in_openpai_shape(pai, member, slave, anon_client):
    body = refusal(post_yaml(pai, "name: [unclosed"), 400, "InvalidParametersError")
    assert body["errors"][0].startswith("(yaml): line 1, column")
    bad = HELLO.replace("memoryMB: 6500", "memoryMB: 10").replace(
        "taskRetryCount: 0", "taskRetryCount: 2"
    )
    body = refusal(post_yaml(pai, bad), 400, "InvalidParametersError")
    assert body["errors"] == [
        "taskRoles.taskrole.taskRetryCount: must be 0: the portal retries a whole job "
        "(jobRetryCount), never one task"
    ]
    body = refusal(
        post_yaml(pai, HELLO.replace("memoryMB: 6500", "memoryMB: 10")),
        400,
        "InvalidParametersError",
    )
    assert body["errors"] == ["taskRoles.taskrole.resourcePerInstance.memoryMB: must be >= 100"]
    assert post_yaml(pai, HELLO).status_code == 202
    body = refusal(post_yaml(pai, HELLO), 409, "ConflictJobError")
    assert body["message"] == "Job name hello-world-job already exists."
    body = refusal(pai.get(f"{V2}/alice~nothing"), 404, "NoJobError")
    assert body["message"] == "Job alice~nothing is not found."
    refusal(anon_client.get(V2), 401, "UnauthorizedUserError")
    refusal(pai.get(V1), 405, "NoApiError")
    refusal(
        pai.post(
            "/api/v1/user/bob/jobs",
            data=json.dumps(seed_example()),
            content_type="application/json",
        ),
        403,
        "ForbiddenUserError",
    )


def test_yaml_aliases_cannot_blow_up(pai, slave):
    """A "billion laughs" protocol: a few lines that expand to 10^9 values."""
    lines = ['a: &a ["x", "x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    for level in range(1, 9):
        lines.append(
            f"{chr(97 + level)}: &{chr(97 + level)} ["
            + ", ".join(["*" + chr(96 + level)] * 10)
            + "]"
        )
    body = refusal(post_yaml(pai, "\n".join(lines)), 400, "InvalidParametersError")
    assert "more than 100000 values" in body["message"]


def test_only_jobs_seen_in_full_are_listed(pai, outsider, slave):
    assert post_yaml(pai, HELLO).status_code == 202
    _, key = api_token_rotate(user=outsider)
    other = APIClient()
    other.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    assert other.get(V2).json() == []
    refusal(other.get(f"{V2}/alice~hello-world-job"), 404, "NoJobError")
