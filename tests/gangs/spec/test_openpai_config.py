"""OpenPAI job configs: the seed's complete example, every rule with its path, all errors at
once, defaults, detection, and the expansion into GPULab-v2-shaped tasks."""

from __future__ import annotations

import json

import pytest

from gangs.openpai_config import (
    AUTO_PORT_BASE,
    OPENPAI,
    env_part,
    expand_tasks,
    job_environment,
    normalize_openpai,
    role_summaries,
    storage_path,
)
from jobs.spec import (
    SpecError,
    detect_version,
    normalize_job,
    parse_any_document,
    parse_job_document,
)
from tests.gangs import OPENPAI_SEED
from tests.jobs.spec.docs import DEFAULTS, DELETE, errors_of, with_changes

FIXTURE = OPENPAI_SEED
LOCAL_IMAGE = "gpuportal/busybox:latest"


def seed_example() -> dict:
    """The seed's distributed TensorFlow job: `//` comment lines removed, a local image."""
    lines = FIXTURE.read_text().splitlines()
    doc = json.loads("\n".join(line for line in lines if not line.strip().startswith("//")))
    doc["image"] = LOCAL_IMAGE
    return doc


def minimal() -> dict:
    return {
        "jobName": "hello",
        "image": LOCAL_IMAGE,
        "taskRoles": [
            {"name": "main", "taskNumber": 1, "cpuNumber": 1, "memoryMB": 100, "gpuNumber": 0,
             "command": "echo hello"}
        ],
    }  # fmt: skip


# --- the seed's example ---------------------------------------------------------------------


def test_fixture_is_the_seed_example_with_its_comments():
    text = FIXTURE.read_text()
    assert "// use 2 ps servers in this job" in text
    assert '"image": "your_docker_registry/pai.run.tensorflow"' in text


def test_seed_example_is_accepted_as_written():
    doc = seed_example()
    config = normalize_openpai(doc)
    # Everything the user wrote is kept as written...
    for key in ("jobName", "image", "dataDir", "outputDir", "codeDir", "virtualCluster"):
        assert config[key] == doc[key]
    assert config["retryCount"] == 0
    assert config["jobEnvs"] == {"batch_size": 32, "job_model": "resnet20"}
    assert config["extras"] == {}
    ps, worker = config["taskRoles"]
    assert (ps["name"], ps["taskNumber"], ps["cpuNumber"], ps["memoryMB"], ps["gpuNumber"]) == (
        "ps_server", 2, 2, 8192, 0,
    )  # fmt: skip
    assert (worker["memoryMB"], worker["gpuNumber"], worker["minSucceededTaskCount"]) == (
        16384, 4, 2,
    )  # fmt: skip
    assert ps["portList"] == [
        {"label": "http", "beginAt": 0, "portNumber": 1},
        {"label": "ssh", "beginAt": 0, "portNumber": 1},
    ]
    assert worker["command"] == doc["taskRoles"][1]["command"]
    # ...and the defaults are filled in.
    assert ps["shmMB"] == worker["shmMB"] == 64
    # minFailedTaskCount omitted: 1, as OpenPAI's REST server fills it in (one failed task
    # fails the job); minSucceededTaskCount omitted: null (succeed once every task completed).
    assert ps["minFailedTaskCount"] == worker["minFailedTaskCount"] == 1
    assert ps["minSucceededTaskCount"] is None
    assert config["authFile"] is None and config["gpuType"] is None


def test_seed_example_as_written_is_an_openpai_document():
    doc = seed_example()
    assert detect_version(doc) == OPENPAI
    parsed = parse_any_document(json.dumps(doc), defaults=DEFAULTS)
    assert parsed.kind == OPENPAI
    assert parsed.document == normalize_openpai(doc)


def test_canonical_config_validates_again_unchanged():
    config = normalize_openpai(seed_example())
    assert normalize_openpai(config) == config
    small = normalize_openpai(minimal())
    assert normalize_openpai(small) == small


# --- defaults -------------------------------------------------------------------------------


def test_defaults():
    config = normalize_openpai(minimal())
    assert config == {
        "jobName": "hello",
        "image": LOCAL_IMAGE,
        "authFile": None,
        "dataDir": None,
        "outputDir": "$PAI_DEFAULT_FS_URI/Output/hello",
        "codeDir": None,
        "virtualCluster": None,
        "taskRoles": [
            {"name": "main", "taskNumber": 1, "cpuNumber": 1, "memoryMB": 100, "shmMB": 64,
             "gpuNumber": 0, "portList": [], "command": "echo hello",
             "minFailedTaskCount": 1, "minSucceededTaskCount": None}
        ],
        "gpuType": None,
        "retryCount": 0,
        "jobEnvs": {},
        "extras": {},
    }  # fmt: skip


def test_completion_counts_omitted_take_openpai_defaults_and_a_written_null_stays():
    """OpenPAI's REST server (v1 job schema): minFailedTaskCount defaults to 1 and allows an
    explicit null ("the job always succeeds regardless of any task failure");
    minSucceededTaskCount defaults to null."""
    omitted = normalize_openpai(minimal())["taskRoles"][0]
    assert (omitted["minFailedTaskCount"], omitted["minSucceededTaskCount"]) == (1, None)
    doc = minimal()
    doc["taskRoles"][0].update(minFailedTaskCount=None, minSucceededTaskCount=None)
    written = normalize_openpai(doc)
    assert written["taskRoles"][0]["minFailedTaskCount"] is None
    assert normalize_openpai(written) == written  # canonical: the null is kept
    env = job_environment(normalize_openpai(minimal()), user_name="u")
    assert env["PAI_MIN_FAILED_TASK_COUNT_main"] == "1"
    assert env["PAI_MIN_SUCCEEDED_TASK_COUNT_main"] == ""


def test_extras_are_kept_as_given():
    extras = {"foo": 1, "key": "value", "nested": {"list": [1, 2.5, None]}}
    assert normalize_openpai({**minimal(), "extras": extras})["extras"] == extras


def test_integral_numbers_become_integers():
    doc = with_changes(minimal(), {"taskRoles[0].cpuNumber": 2.0, "retryCount": 3.0})
    config = normalize_openpai(doc)
    assert config["taskRoles"][0]["cpuNumber"] == 2 and config["retryCount"] == 3


# --- every rule, with its path ----------------------------------------------------------------

T = "taskRoles[0]"
P = "taskRoles[0].portList[0]"
PORT = {"label": "http", "beginAt": 0, "portNumber": 1}

CASES = [
    ({"jobName": DELETE}, "jobName", "is required"),
    ({"jobName": "has space"}, "jobName", r"must match ^[A-Za-z0-9\-._~]+$"),
    ({"jobName": "a/b"}, "jobName", "must match"),
    ({"jobName": 5}, "jobName", "must be a string"),
    ({"jobName": "x" * 201}, "jobName", "at most 200 characters"),
    ({"image": DELETE}, "image", "is required"),
    ({"image": ""}, "image", "must not be empty"),
    ({"image": "UPPER:case"}, "image", ""),
    ({"authFile": 3}, "authFile", "must be a string"),
    ({"authFile": "$PAI_DEFAULT_FS_URI"}, "authFile", "must name a file"),
    ({"dataDir": "relative/path"}, "dataDir", "must be a path in the project's storage"),
    ({"dataDir": "$PAI_DEFAULT_FS_URI/a/../b"}, "dataDir", 'must not contain "." or ".."'),
    ({"outputDir": "$PAI_DEFAULT_FS_URIx/a"}, "outputDir", "must be a path"),
    ({"codeDir": ""}, "codeDir", "must not be empty"),
    ({"virtualCluster": ""}, "virtualCluster", "must not be empty"),
    ({"virtualCluster": 3}, "virtualCluster", "must be a string"),
    ({"gpuType": 7}, "gpuType", "must be a string"),
    ({"gpuType": "V"}, "gpuType", "at least 2 characters"),
    ({"retryCount": -1}, "retryCount", "must be >= 0"),
    ({"retryCount": 1.5}, "retryCount", "must be an integer"),
    ({"jobEnvs": []}, "jobEnvs", "must be an object"),
    ({"jobEnvs": {"1bad": 1}}, "jobEnvs.1bad", "must be a variable name"),
    ({"jobEnvs": {"PAI_JOB_NAME": "x"}}, "jobEnvs.PAI_JOB_NAME", "set by the portal"),
    ({"jobEnvs": {"CUDA_VISIBLE_DEVICES": "0"}}, "jobEnvs.CUDA_VISIBLE_DEVICES", "portal"),
    ({"jobEnvs": {"x": 1.5}}, "jobEnvs.x", "must be a string, integer or boolean"),
    ({"jobEnvs": {"x": None}}, "jobEnvs.x", "must be a string, integer or boolean"),
    ({"jobEnvs": {"isDebug": "true"}}, "jobEnvs.isDebug", "must be true or false"),
    ({"jobEnvs": {"paiAzRDMA": 1}}, "jobEnvs.paiAzRDMA", "must be true or false"),
    ({"jobEnvs": {"paiAzRDMA": True}}, "jobEnvs.paiAzRDMA", "Azure RDMA is not offered"),
    ({"extras": "x"}, "extras", "must be an object"),
    ({"jobname": "x"}, "jobname", 'unknown key (did you mean "jobName"?)'),
    ({"job_name": "x"}, "job_name", 'unknown key (did you mean "jobName"?)'),
    ({f"{T}.task_number": 1}, f"{T}.task_number", 'unknown key (did you mean "taskNumber"?)'),
    ({f"{T}.portList": [{**PORT, "begin_at": 1}]}, f"{P}.begin_at", "unknown key"),
    ({"taskRoles": DELETE, "jobName": "x"}, "taskRoles", "is required"),
    ({"taskRoles": []}, "taskRoles", "at least one task role"),
    ({"taskRoles": {}}, "taskRoles", "must be a list"),
    ({"taskRoles[0]": 5}, T, "must be an object"),
    ({f"{T}.name": DELETE}, f"{T}.name", "is required"),
    ({f"{T}.name": "a-b"}, f"{T}.name", "must match ^[A-Za-z0-9._~]+$"),
    ({f"{T}.taskNumber": 0}, f"{T}.taskNumber", "must be >= 1"),
    ({f"{T}.taskNumber": DELETE}, f"{T}.taskNumber", "is required"),
    ({f"{T}.cpuNumber": 0}, f"{T}.cpuNumber", "must be >= 1"),
    ({f"{T}.cpuNumber": DELETE}, f"{T}.cpuNumber", "is required"),
    ({f"{T}.memoryMB": 99}, f"{T}.memoryMB", "must be >= 100"),
    ({f"{T}.memoryMB": DELETE}, f"{T}.memoryMB", "is required"),
    ({f"{T}.shmMB": 101}, f"{T}.shmMB", "must be <= memoryMB (100)"),
    ({f"{T}.shmMB": 0}, f"{T}.shmMB", "must be >= 1"),
    ({f"{T}.gpuNumber": -1}, f"{T}.gpuNumber", "must be >= 0"),
    ({f"{T}.gpuNumber": DELETE}, f"{T}.gpuNumber", "is required"),
    ({f"{T}.command": DELETE}, f"{T}.command", "is required"),
    ({f"{T}.command": "   "}, f"{T}.command", "must not be empty"),
    ({f"{T}.command": ["echo"]}, f"{T}.command", "must be a string"),
    ({f"{T}.minFailedTaskCount": 0}, f"{T}.minFailedTaskCount", "must be >= 1"),
    ({f"{T}.minSucceededTaskCount": 0}, f"{T}.minSucceededTaskCount", "must be >= 1"),
    ({f"{T}.minSucceededTaskCount": 2}, f"{T}.minSucceededTaskCount", "<= taskNumber (1)"),
    ({f"{T}.minFailedTaskCount": 2}, f"{T}.minFailedTaskCount", "<= taskNumber (1)"),
    ({f"{T}.portList": {}}, f"{T}.portList", "must be a list"),
    ({f"{T}.portList": [5]}, P, "must be an object"),
    ({f"{T}.portList": [{"beginAt": 0, "portNumber": 1}]}, f"{P}.label", "is required"),
    ({f"{T}.portList": [{**PORT, "label": "a b"}]}, f"{P}.label", "must match"),
    ({f"{T}.portList": [{"label": "a", "portNumber": 1}]}, f"{P}.beginAt", "is required"),
    ({f"{T}.portList": [{**PORT, "beginAt": -1}]}, f"{P}.beginAt", "must be >= 0"),
    ({f"{T}.portList": [{**PORT, "beginAt": 70000}]}, f"{P}.beginAt", "must be <= 65535"),
    ({f"{T}.portList": [{"label": "a", "beginAt": 0}]}, f"{P}.portNumber", "is required"),
    ({f"{T}.portList": [{**PORT, "portNumber": 0}]}, f"{P}.portNumber", "must be >= 1"),
    (
        {f"{T}.portList": [{**PORT, "beginAt": 65535, "portNumber": 2}]},
        f"{P}.portNumber",
        "ports 65535..65536 go past 65535",
    ),
    ({f"{T}.portList": [{**PORT, "extra": 1}]}, f"{P}.extra", "unknown key"),
    ({f"{T}.foo": 1}, f"{T}.foo", "unknown key"),
]


@pytest.mark.parametrize(("changes", "path", "fragment"), CASES)
def test_rule(changes, path, fragment):
    doc = with_changes(minimal(), changes)
    errors = errors_of(normalize_openpai, doc)
    assert any(p == path and fragment in m for p, m in errors), errors


def test_role_names_must_be_unique():
    doc = minimal()
    doc["taskRoles"].append(dict(doc["taskRoles"][0]))
    assert errors_of(normalize_openpai, doc) == [
        ("taskRoles[1].name", 'must be unique ("main" is also taskRoles[0].name)')
    ]


def test_port_labels_unique_and_fixed_ranges_do_not_overlap():
    ports = [
        {"label": "a", "beginAt": 8000, "portNumber": 10},
        {"label": "a", "beginAt": 8005, "portNumber": 1},
    ]
    doc = with_changes(minimal(), {f"{T}.portList": ports})
    assert errors_of(normalize_openpai, doc) == [
        (f"{T}.portList[1].label", 'must be unique in the task role ("a" is also '
         f"{T}.portList[0].label)"),
        (f"{T}.portList[1].beginAt", f"ports 8005..8005 overlap {T}.portList[0]"),
    ]  # fmt: skip


def test_the_issue_example_path():
    doc = minimal()
    doc["taskRoles"].append({**doc["taskRoles"][0], "name": "second", "taskNumber": 0})
    assert errors_of(normalize_openpai, doc) == [("taskRoles[1].taskNumber", "must be >= 1")]


def test_every_error_at_once():
    doc = {
        "jobName": "bad name",
        "taskRoles": [
            {"name": "a", "taskNumber": 0, "cpuNumber": 0, "memoryMB": 50, "gpuNumber": -1,
             "command": ""},
            {"name": "a", "taskNumber": 1, "cpuNumber": 1, "memoryMB": 200, "shmMB": 300,
             "gpuNumber": 0, "command": "x",
             "portList": [{"label": "p", "beginAt": 0, "portNumber": 0}]},
        ],
        "retryCount": -2,
        "jobEnvs": {"PAI_X": 1},
        "extras": [],
    }  # fmt: skip
    errors = errors_of(normalize_openpai, doc)
    assert {path for path, _ in errors} == {
        "jobName",
        "image",
        "taskRoles[0].taskNumber",
        "taskRoles[0].cpuNumber",
        "taskRoles[0].memoryMB",
        "taskRoles[0].gpuNumber",
        "taskRoles[0].command",
        "taskRoles[1].name",
        "taskRoles[1].shmMB",
        "taskRoles[1].portList[0].portNumber",
        "retryCount",
        "jobEnvs.PAI_X",
        "extras",
    }
    assert len(errors) == 13


def test_error_text_names_the_path():
    doc = with_changes(minimal(), {f"{T}.taskNumber": 0})
    with pytest.raises(SpecError) as info:
        normalize_openpai(doc)
    assert str(info.value) == "taskRoles[0].taskNumber: must be >= 1"


@pytest.mark.parametrize("doc", [[], "x", None, 5])
def test_config_must_be_an_object(doc):
    assert errors_of(normalize_openpai, doc)[0][0] == "(document)"


def test_private_registry_rule_applies_to_the_image():
    doc = {**minimal(), "image": "localhost:5000/team/img:1"}
    assert errors_of(normalize_openpai, doc)[0][0] == "image"
    config = normalize_openpai(doc, allowed_registries=("localhost:5000",))
    assert config["image"] == "localhost:5000/team/img:1"


# --- storage paths --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "path"),
    [
        ("$PAI_DEFAULT_FS_URI/path/data", "/path/data"),
        ("${PAI_DEFAULT_FS_URI}/path/data/", "/path/data"),
        ("hdfs://namenode:9000/path//data", "/path/data"),
        ("/path/data", "/path/data"),
        ("$PAI_DEFAULT_FS_URI", "/"),
    ],
)
def test_storage_paths(value, path):
    assert normalize_openpai({**minimal(), "dataDir": value})["dataDir"] == value
    assert storage_path(value) == path


# --- detection ------------------------------------------------------------------------------


def test_detection():
    assert detect_version({"jobName": "x", "taskRoles": []}) == OPENPAI
    assert detect_version({"taskRoles": []}) == OPENPAI  # then "jobName: is required"
    assert detect_version({"request": {}}) == 2
    assert detect_version({"jobDefinition": {}}) == 1
    with pytest.raises(SpecError) as info:
        detect_version({"name": "x"})
    message = info.value.errors[0].message
    assert '"request"' in message and '"jobDefinition"' in message
    assert '"jobName" and "taskRoles" (OpenPAI)' in message


def test_parse_job_document_still_takes_gpulab_documents_only():
    errors = errors_of(parse_job_document, minimal(), defaults=DEFAULTS)
    assert errors == [
        ("(document)", "is an OpenPAI job config: this accepts GPULab v1 or v2 documents only")
    ]
    gpulab = {
        "name": "v2",
        "request": {
            "resources": {"cpus": 1, "gpus": 0, "cpuMemoryGb": 1},
            "docker": {"image": LOCAL_IMAGE},
        },
    }
    parsed = parse_any_document(gpulab, defaults=DEFAULTS)
    assert parsed.kind == "gpulab" and parsed.was_v1 is False
    assert parsed.document == parse_job_document(gpulab, defaults=DEFAULTS)[0]


def test_parse_any_document_reports_openpai_errors():
    text = json.dumps(with_changes(minimal(), {f"{T}.memoryMB": 10}))
    assert errors_of(parse_any_document, text, defaults=DEFAULTS) == [
        (f"{T}.memoryMB", "must be >= 100")
    ]


# --- expansion into tasks -------------------------------------------------------------------


def test_seed_example_expands_into_four_valid_gpulab_requests():
    config = normalize_openpai(seed_example())
    tasks = expand_tasks(config, user_name="alice", cluster_id=3)
    assert [(t["role"], t["index"]) for t in tasks] == [
        ("ps_server", 0), ("ps_server", 1), ("worker", 0), ("worker", 1),
    ]  # fmt: skip
    assert tasks[3]["name"] == "tensorflow-distributed-jobguid.worker.1"
    for task in tasks:
        # Each request is a valid GPULab v2 request as it stands.
        doc = {"name": task["name"], "request": task["request"]}
        normalize_job(doc, defaults=DEFAULTS)
    worker = tasks[2]["request"]
    assert worker["resources"] == {
        "cpus": 2, "gpus": 4, "cpuMemoryGb": 16, "gpuModel": [], "clusterId": 3,
    }  # fmt: skip
    assert tasks[0]["request"]["resources"]["cpuMemoryGb"] == 8
    docker = worker["docker"]
    assert docker["image"] == LOCAL_IMAGE
    assert docker["command"] == ["/bin/sh", "-c", config["taskRoles"][1]["command"]]
    assert docker["storage"] == [
        {"hostPath": f"/project/path/{config['jobName']}/{d}/",
         "containerPath": f"/project/path/{config['jobName']}/{d}/"}
        for d in ("data", "output", "code")  # code: read-only at launch (readOnlyMounts)
    ]  # fmt: skip
    assert tasks[2]["readOnlyMounts"] == [
        {"hostPath": f"/project/path/{config['jobName']}/code/",
         "containerPath": f"/project/path/{config['jobName']}/code/"}
    ]  # fmt: skip
    assert tasks[3]["minSucceededTaskCount"] == 2 and tasks[3]["retryCount"] == 0


def test_task_environment():
    config = normalize_openpai(seed_example())
    tasks = expand_tasks(config, user_name="alice")
    env = tasks[3]["request"]["docker"]["environment"]
    assert env["batch_size"] == 32 and env["job_model"] == "resnet20"
    assert env["PAI_JOB_NAME"] == "tensorflow-distributed-jobguid"
    assert env["PAI_USER_NAME"] == "alice"
    assert env["PAI_DEFAULT_FS_URI"] == "/project"
    assert env["PAI_TASK_ROLE_COUNT"] == "2"
    assert env["PAI_TASK_ROLE_LIST"] == "ps_server,worker"
    assert env["PAI_TASK_ROLE_TASK_COUNT_ps_server"] == "2"
    assert env["PAI_RESOURCE_worker"] == "4,2,16384,64"
    assert env["PAI_MIN_SUCCEEDED_TASK_COUNT_worker"] == "2"
    assert env["PAI_MIN_FAILED_TASK_COUNT_worker"] == "1"  # OpenPAI's default for an omitted count
    assert env["PAI_CURRENT_TASK_ROLE_NAME"] == "worker"
    assert env["PAI_CURRENT_TASK_ROLE_CURRENT_TASK_INDEX"] == "1"
    assert env["PAI_DATA_DIR"] == "/project/path/tensorflow-distributed-jobguid/data"
    assert env["PAI_OUTPUT_DIR"] == "/project/path/tensorflow-distributed-jobguid/output"
    assert env["PAI_CODE_DIR"] == "/project/path/tensorflow-distributed-jobguid/code"
    assert env["PAI_PORT_LIST_worker_1_http"] == str(AUTO_PORT_BASE)
    assert env["PAI_PORT_LIST_worker_1_ssh"] == str(AUTO_PORT_BASE + 1)
    # Known only once tasks are placed: left to the runtime.
    assert not [name for name in env if name.startswith(("PAI_HOST_IP_", "PAI_TASK_ROLE_ps"))]


def test_ports_fixed_and_any_free():
    ports = [
        {"label": "web", "beginAt": 0, "portNumber": 2},
        {"label": "fixed", "beginAt": AUTO_PORT_BASE + 1, "portNumber": 2},
        {"label": "more", "beginAt": 0, "portNumber": 1},
    ]
    config = normalize_openpai(with_changes(minimal(), {f"{T}.portList": ports}))
    (task,) = expand_tasks(config, user_name="u")
    assert task["ports"] == [
        {"label": "web", "containerPorts": [AUTO_PORT_BASE, AUTO_PORT_BASE + 3],
         "hostPorts": [None, None]},
        {"label": "fixed", "containerPorts": [AUTO_PORT_BASE + 1, AUTO_PORT_BASE + 2],
         "hostPorts": [AUTO_PORT_BASE + 1, AUTO_PORT_BASE + 2]},
        {"label": "more", "containerPorts": [AUTO_PORT_BASE + 4], "hostPorts": [None]},
    ]  # fmt: skip
    mappings = task["request"]["docker"]["portMappings"]
    assert [(m["containerPort"], m["hostPort"]) for m in mappings] == [
        (AUTO_PORT_BASE, None), (AUTO_PORT_BASE + 3, None),
        (AUTO_PORT_BASE + 1, AUTO_PORT_BASE + 1), (AUTO_PORT_BASE + 2, AUTO_PORT_BASE + 2),
        (AUTO_PORT_BASE + 4, None),
    ]  # fmt: skip
    env = task["request"]["docker"]["environment"]
    assert env["PAI_PORT_LIST_main_0_web"] == f"{AUTO_PORT_BASE},{AUTO_PORT_BASE + 3}"
    normalize_job({"name": "x", "request": task["request"]}, defaults=DEFAULTS)


def test_shm_gpu_type_debug_and_unsafe_role_names():
    doc = with_changes(
        minimal(),
        {
            f"{T}.name": "ps.server~1",
            f"{T}.memoryMB": 4096,
            f"{T}.shmMB": 1500,
            "gpuType": "A100",
            "jobEnvs": {"isDebug": True},
        },
    )
    config = normalize_openpai(doc)
    (task,) = expand_tasks(config, user_name="u")
    assert task["request"]["resources"]["gpuModel"] == ["A100"]
    # shmMB is the container's shm size (set at launch, jobs.launch), not a tmpfs mount.
    assert all(m["containerPath"] != "/dev/shm/" for m in task["request"]["docker"]["storage"])
    assert task["debug"] is True and task["shmMB"] == 1500
    env = task["request"]["docker"]["environment"]
    assert env["PAI_RESOURCE_ps_server_1"] == "0,1,4096,1500"
    assert env["PAI_CURRENT_TASK_ROLE_NAME"] == "ps.server~1"
    assert env_part("a.b~c") == "a_b_c"
    normalize_job({"name": "x", "request": task["request"]}, defaults=DEFAULTS)


def test_role_summaries():
    config = normalize_openpai(seed_example())
    ps, worker = role_summaries(config)
    assert ps["name"] == "ps_server" and ps["taskNumber"] == 2 and ps["ports"] == "http×1, ssh×1"
    assert worker["gpuNumber"] == 4


def test_unstorable_text_is_refused_first_with_its_path():
    doc = with_changes(minimal(), {f"{T}.command": "echo \x00", "extras": {"k\ud800": 1}})
    assert errors_of(normalize_openpai, doc) == [
        (f"{T}.command", "contains a NUL byte, which cannot be stored"),
        ("extras.k\\ud800", "the key contains an unpaired surrogate, which cannot be stored"),
    ]
