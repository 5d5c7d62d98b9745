"""Version 1 ``jobDefinition`` documents: conversion to v2 (docs/gpulab-format.md, section 2)."""

import json

import pytest

from jobs.spec import SpecError, convert_v1, normalize_job, parse_job_document, v1_error_path

from .docs import DEFAULTS, DELETE, ED25519_KEY, errors_of, with_changes


def v1_minimal() -> dict:
    return {
        "jobDefinition": {
            "dockerImage": "debian:stable",
            "resources": {"cpuCores": 1, "gpus": 0, "systemMemory": 1024},
        }
    }


def value_at(doc: dict, path: str):
    for part in path.split("."):
        doc = doc[part]
    return doc


J = "jobDefinition"
# (changes to v1_minimal(), path in the converted v2 document, expected value)
ROWS = [
    ({}, "name", "unnamed"),
    ({f"{J}.name": "helloworld"}, "name", "helloworld"),
    ({f"{J}.description": "hello world"}, "description", "hello world"),
    ({f"{J}.clusterId": 3}, "request.resources.clusterId", 3),
    ({f"{J}.clusterId": "4"}, "request.resources.clusterId", 4),
    ({f"{J}.clusterId": [5, 6]}, "request.resources.clusterId", 5),
    ({f"{J}.clusterId": ["7"]}, "request.resources.clusterId", 7),
    ({f"{J}.dockerImage": "nvidia/cuda:11"}, "request.docker.image", "nvidia/cuda:11"),
    ({f"{J}.command": ""}, "request.docker.command", []),
    ({f"{J}.command": "nvidia-smi -L"}, "request.docker.command", "nvidia-smi -L"),
    ({f"{J}.command": ["ls", "-l"]}, "request.docker.command", ["ls", "-l"]),
    ({f"{J}.resources.cpuCores": 4}, "request.resources.cpus", 4),
    ({f"{J}.resources.gpus": 2}, "request.resources.gpus", 2),
    ({f"{J}.resources.systemMemory": 2000}, "request.resources.cpuMemoryGb", 2),
    ({f"{J}.resources.systemMemory": 64000}, "request.resources.cpuMemoryGb", 63),
    ({f"{J}.resources.systemMemory": 1024}, "request.resources.cpuMemoryGb", 1),
    ({f"{J}.resources.systemMemory": 1025}, "request.resources.cpuMemoryGb", 2),
    ({f"{J}.resources.systemMemory": 1500.5}, "request.resources.cpuMemoryGb", 2),
    ({f"{J}.resources.gpuModel": ["V100"]}, "request.resources.gpuModel", ["V100"]),
    ({f"{J}.resources.minCudaVersion": 10}, "request.resources.minCudaVersion", 10),
    (
        {f"{J}.jobDataLocations": [{"mountPoint": "/project"}]},
        "request.docker.storage",
        [{"containerPath": "/project"}],
    ),
    (
        {f"{J}.jobDataLocations": [{"sharePath": "/project_scratch"}]},
        "request.docker.storage",
        [{"hostPath": "/project_scratch"}],
    ),
    (
        {f"{J}.jobDataLocations": [{"sharePath": "/project/mycode/", "mountPoint": "/work/code/"}]},
        "request.docker.storage",
        [{"containerPath": "/work/code/", "hostPath": "/project/mycode/"}],
    ),
    (
        {f"{J}.portMappings": [{"containerPort": 80, "hostPort": 8080}]},
        "request.docker.portMappings",
        [{"containerPort": 80, "hostPort": 8080}],
    ),
    ({f"{J}.environment": {"A": 1}}, "request.docker.environment", {"A": 1}),
    ({f"{J}.projectGidVariableName": "GID"}, "request.docker.projectGidVariableName", "GID"),
    ({f"{J}.workingDir": "/work"}, "request.docker.workingDir", "/work"),
    ({f"{J}.dockerGroupAdd": ["video"]}, "request.docker.groupAdd", ["video"]),
    ({f"{J}.dockerUser": "root"}, "request.docker.user", "root"),
    ({"ssh_pubkeys": [f"{ED25519_KEY} me"]}, "request.extra.sshPubKeys", [f"{ED25519_KEY} me"]),
    ({"emails_queue": ["a@example.org"]}, "request.extra.emailOnQueue", ["a@example.org"]),
    ({"emails_run": ["b@example.org"]}, "request.extra.emailOnRun", ["b@example.org"]),
    ({"emails_end": ["c@example.org"]}, "request.extra.emailOnEnd", ["c@example.org"]),
    ({"name": "top-level name"}, "name", "top-level name"),
    ({"name": "top", f"{J}.name": "inner"}, "name", "inner"),
]


@pytest.mark.parametrize(
    ("changes", "path", "expected"), ROWS, ids=[f"{i}:{r[1]}" for i, r in enumerate(ROWS)]
)
def test_conversion_row(changes, path, expected):
    converted = convert_v1(with_changes(v1_minimal(), changes))
    assert value_at(converted, path) == expected
    # every converted row is a valid v2 job
    normalize_job(converted, defaults=DEFAULTS)


def test_there_are_at_least_twelve_rows():
    assert len(ROWS) >= 12


@pytest.mark.parametrize(
    "changes",
    [{f"{J}.jobType": "BATCH"}, {f"{J}.userUidVariableName": "MY_UID"}, {f"{J}.clusterId": []}],
)
def test_dropped_keys_leave_no_trace(changes):
    assert convert_v1(with_changes(v1_minimal(), changes)) == convert_v1(v1_minimal())


def test_missing_resources_are_reported_in_v1_terms():
    doc = with_changes(v1_minimal(), {f"{J}.resources": DELETE})
    assert errors_of(parse_job_document, doc, defaults=DEFAULTS) == [
        (f"{J}.resources.cpuCores", "is required"),
        (f"{J}.resources.gpus", "is required"),
        (f"{J}.resources.systemMemory", "is required"),
    ]


@pytest.mark.parametrize(
    ("location", "storage"),
    [
        ({"mountPoint": "/project"}, {"containerPath": "/project/", "hostPath": "/project/"}),
        (
            {"sharePath": "/project_scratch"},
            {"containerPath": "/project_scratch/", "hostPath": "/project_scratch/"},
        ),
        ({"sharePath": ".ssh"}, {"containerPath": "/root/.ssh/", "hostPath": ".ssh/"}),
    ],
)
def test_data_locations_default_to_each_other_once_validated(location, storage):
    doc, _ = parse_job_document(
        with_changes(v1_minimal(), {f"{J}.jobDataLocations": [location]}), defaults=DEFAULTS
    )
    assert doc["request"]["docker"]["storage"] == [storage]


def test_conversion_has_no_scheduling_so_defaults_apply():
    converted = convert_v1(v1_minimal())
    assert "scheduling" not in converted["request"]
    scheduling = normalize_job(converted, defaults=DEFAULTS)["request"]["scheduling"]
    assert (scheduling["minDuration"], scheduling["maxDuration"]) == ("1 week", "2 weeks")


def test_server_set_keys_are_ignored():
    doc = {
        **v1_minimal(),
        "uuid": "x",
        "owner": {},
        "deploymentEnvironment": "production",
        "state": None,
    }
    assert convert_v1(doc) == convert_v1(v1_minimal())


COMPLETE_V1 = """{
    "jobDefinition": {
        "name": "helloworld",
        "description": "hello world",
        "clusterId": [1],
        "dockerImage": "gitlab+deploy-token-3:s3cr3t@gitlab.ilabt.imec.be:4567/ilabt/gpulab/sample:nvidia-smi",
        "jobType": "BATCH",
        "command": "",
        "resources": {
            "gpus": 1,
            "systemMemory": 2000,
            "cpuCores": 2,
            "gpuModel": "1080",
            "minCudaVersion": 9
        },
        "jobDataLocations": [
            { "mountPoint": "/project" },
            { "sharePath": "/project/mycode/", "mountPoint": "/work/code/" }
        ],
        "portMappings": [ { "containerPort": 80 }, { "containerPort": 8888, "hostPort": 18888 } ],
        "environment": { "DEMO_A": 1, "DEMO_B": "two" },
        "projectGidVariableName": "DEMO_PROJECT_GID",
        "workingDir": "/work/code",
        "dockerGroupAdd": "video",
        "dockerUser": "root",
        "userUidVariableName": "DEMO_UID"
    },
    "ssh_pubkeys": ["@KEY@ me@laptop"],
    "emails_queue": [],
    "emails_run": ["me@example.org"],
    "emails_end": ["me@example.org"]
}""".replace("@KEY@", ED25519_KEY)


def test_complete_v1_document_converts_and_validates():
    converted = convert_v1(json.loads(COMPLETE_V1))
    assert converted == {
        "name": "helloworld",
        "description": "hello world",
        "request": {
            "resources": {
                "cpus": 2,
                "gpus": 1,
                "gpuModel": "1080",
                "minCudaVersion": 9,
                "cpuMemoryGb": 2,
                "clusterId": 1,
            },
            "docker": {
                "image": "gitlab+deploy-token-3:s3cr3t@gitlab.ilabt.imec.be:4567/ilabt/gpulab/sample:nvidia-smi",
                "portMappings": [{"containerPort": 80}, {"containerPort": 8888, "hostPort": 18888}],
                "environment": {"DEMO_A": 1, "DEMO_B": "two"},
                "projectGidVariableName": "DEMO_PROJECT_GID",
                "workingDir": "/work/code",
                "groupAdd": "video",
                "user": "root",
                "command": [],
                "storage": [
                    {"containerPath": "/project"},
                    {"containerPath": "/work/code/", "hostPath": "/project/mycode/"},
                ],
            },
            "extra": {
                "sshPubKeys": [f"{ED25519_KEY} me@laptop"],
                "emailOnQueue": [],
                "emailOnRun": ["me@example.org"],
                "emailOnEnd": ["me@example.org"],
            },
        },
    }
    doc, was_v1 = parse_job_document(COMPLETE_V1, defaults=DEFAULTS)
    assert was_v1 is True
    assert doc == normalize_job(converted, defaults=DEFAULTS)
    assert doc["request"]["resources"]["gpuModel"] == ["1080"]
    assert doc["request"]["docker"]["storage"] == [
        {"containerPath": "/project/", "hostPath": "/project/"},
        {"containerPath": "/work/code/", "hostPath": "/project/mycode/"},
    ]
    assert doc["request"]["docker"]["workingDir"] == "/work/code/"
    assert doc["request"]["docker"]["groupAdd"] == ["video"]
    assert doc["request"]["docker"]["portMappings"][1] == {
        "containerPort": 8888,
        "hostPort": 18888,
        "hostIp": None,
    }
    assert doc["request"]["extra"]["emailOnHalt"] == []
    assert normalize_job(doc, defaults=DEFAULTS) == doc


# --- errors ------------------------------------------------------------------------------------

ERRORS = [
    ({f"{J}.foo": 1}, f"{J}.foo", "unknown key"),
    ({f"{J}.docker_image": "x"}, f"{J}.docker_image", 'unknown key (did you mean "dockerImage"?)'),
    ({f"{J}.resources.memory": 1}, f"{J}.resources.memory", "unknown key"),
    (
        {f"{J}.jobDataLocations": [{"mountPoint": "/a", "readOnly": True}]},
        f"{J}.jobDataLocations[0].readOnly",
        "unknown key",
    ),
    ({f"{J}.jobDataLocations": [{}]}, f"{J}.jobDataLocations[0]", "needs mountPoint or sharePath"),
    ({f"{J}.jobDataLocations": ["/project"]}, f"{J}.jobDataLocations[0]", "must be an object"),
    ({f"{J}.jobDataLocations": {"mountPoint": "/a"}}, f"{J}.jobDataLocations", "must be a list"),
    ({f"{J}.clusterId": "abc"}, f"{J}.clusterId", "must be a cluster id"),
    ({f"{J}.clusterId": ["abc"]}, f"{J}.clusterId[0]", "must be a cluster id"),
    (
        {f"{J}.resources.systemMemory": "lots"},
        f"{J}.resources.systemMemory",
        "must be a number of MB",
    ),
    # Numbers are JSON numbers (clusterId alone may be text, as v1 documented it).
    (
        {f"{J}.resources.systemMemory": "4096"},
        f"{J}.resources.systemMemory",
        "must be a number of MB",
    ),
    ({f"{J}.resources": 4}, f"{J}.resources", "must be an object"),
    ({J: DELETE}, J, "is required"),
    ({J: "x"}, J, "must be an object"),
    ({"emails_halt": []}, "emails_halt", "unknown key"),
]


@pytest.mark.parametrize(("changes", "path", "fragment"), ERRORS)
def test_conversion_errors(changes, path, fragment):
    errors = errors_of(convert_v1, with_changes(v1_minimal(), changes))
    assert len(errors) == 1, errors
    assert errors[0][0] == path
    assert fragment in errors[0][1]


# Errors of the v2 validation of a converted document name the fields the user wrote.
V2_ERRORS_IN_V1_TERMS = [
    ({f"{J}.resources.cpuCores": 0}, f"{J}.resources.cpuCores", "must be > 0"),
    ({f"{J}.resources.systemMemory": 0}, f"{J}.resources.systemMemory", "must be > 0"),
    ({f"{J}.resources.gpus": -1}, f"{J}.resources.gpus", "must be >= 0"),
    ({f"{J}.resources.cpuCores": DELETE}, f"{J}.resources.cpuCores", "is required"),
    ({f"{J}.dockerImage": "Bad Image"}, f"{J}.dockerImage", "must not contain spaces"),
    ({f"{J}.dockerImage": DELETE}, f"{J}.dockerImage", "is required"),
    ({f"{J}.clusterId": -2}, f"{J}.clusterId", "must be >= 0"),
    ({f"{J}.name": ""}, f"{J}.name", "must not be empty"),
    (
        {f"{J}.jobDataLocations": [{"mountPoint": "rel"}]},
        f"{J}.jobDataLocations[0].mountPoint",
        "must be an absolute path",
    ),
    (
        {f"{J}.jobDataLocations": [{"mountPoint": "/a", "sharePath": "x"}]},
        f"{J}.jobDataLocations[0].sharePath",
        "must be an absolute path",
    ),
    ({f"{J}.dockerUser": "1000:1000"}, f"{J}.dockerUser", "must be a user name"),
    ({f"{J}.dockerGroupAdd": ["a-b"]}, f"{J}.dockerGroupAdd[0]", "must be a group"),
    ({f"{J}.environment": {"1X": 1}}, f"{J}.environment.1X", "must be a variable name"),
    ({f"{J}.portMappings": ["80"]}, f"{J}.portMappings[0]", "must be an object like"),
    ({f"{J}.resources.cpuCores": "2"}, f"{J}.resources.cpuCores", "must be an integer"),
    ({"ssh_pubkeys": ["garbage"]}, "ssh_pubkeys[0]", "must be an OpenSSH public key"),
    ({"emails_end": ["nope"]}, "emails_end[0]", "must be an e-mail address"),
]


@pytest.mark.parametrize(("changes", "path", "fragment"), V2_ERRORS_IN_V1_TERMS)
def test_v2_errors_are_reported_in_v1_terms(changes, path, fragment):
    with pytest.raises(SpecError) as info:
        parse_job_document(with_changes(v1_minimal(), changes), defaults=DEFAULTS)
    errors = info.value.errors
    assert [e.path for e in errors] == [path]
    assert fragment in errors[0].message


@pytest.mark.parametrize(
    ("v2_path", "v1_path"),
    [
        ("request.resources.cpus", "jobDefinition.resources.cpuCores"),
        ("request.resources.gpuModel[1]", "jobDefinition.resources.gpuModel[1]"),
        ("request.docker.storage[3].hostPath", "jobDefinition.jobDataLocations[3].sharePath"),
        ("request.docker.storage[0]", "jobDefinition.jobDataLocations[0]"),
        ("request.docker.userName", "jobDefinition.userName"),  # not dockerUser: a different key
        ("request.docker", "jobDefinition"),
        ("request.extra.emailOnHalt", "request.extra.emailOnHalt"),  # no v1 counterpart
        ("(json)", "(json)"),
    ],
)
def test_v1_error_path(v2_path, v1_path):
    assert v1_error_path(v2_path) == v1_path
