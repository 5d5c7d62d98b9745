"""Valid v2 documents: aliases, snake_case, shorthands, defaults and the canonical form."""

import json

import pytest

from jobs.spec import (
    SpecDefaults,
    duration_seconds,
    load_json,
    normalize_job,
    parse_job_document,
    tmpfs_gb,
)

from .docs import DEFAULTS, ECDSA_KEY, ED25519_KEY, errors_of, minimal_job, with_changes

UUID_A = "f6dbca7b-58fd-47e3-9ac4-9ad33e7f6030"
UUID_B = "0e2f5b7c-1111-4222-8333-944455556666"


def norm(doc: dict, defaults: SpecDefaults = DEFAULTS) -> dict:
    return normalize_job(doc, defaults=defaults)


def req(doc: dict, section: str) -> dict:
    return norm(doc)["request"][section]


FULL_JOB = {
    "name": "full",
    "description": "every field",
    "request": {
        "resources": {
            "cpus": 4,
            "gpus": 2,
            "cpuMemoryGb": 16,
            "gpuMemoryGb": 24,
            "gpuModel": ["V100", "A100"],
            "features": ["nvlink"],
            "minCudaVersion": 11,
            "clusterId": 3,
            "slaveName": "slave7A",
            "slaveInstanceId": "af25579982dc3949040",
        },
        "docker": {
            "image": "gitlab+deploy-token-3:s3cr3t@gitlab.example.org:4567/group/sample:v1",
            "command": ["python", "train.py", "--epochs", "3"],
            "environment": {"A": "x", "B": 2, "C": True, "_D": ""},
            "storage": [
                {"hostPath": "/project_ghent", "containerPath": "/project"},
                {"hostPath": "tmpfs", "containerPath": "/scratch", "sizeGb": 4},
                {"hostPath": "tmpfs", "containerPath": "/cache/", "sizeGb": 2},
                {"hostPath": ".ssh"},
                {"hostPath": "PROJECT_SHARE_AUTO", "containerPath": "/share"},
            ],
            "portMappings": [80, {"containerPort": 8888, "hostPort": 18888, "hostIp": "::0001"}],
            "projectGidVariableName": "PROJECT_GID",
            "workingDir": "/project/run",
            "groupAdd": ["video", "render"],
            "user": "1000",
        },
        "scheduling": {
            "restartable": True,
            "allowHaltWithoutSignal": True,
            "minDuration": "30 minutes",
            "maxDuration": "8 hours",
            "notBefore": "2030-01-01T09:00:00+01:00",
            "notAfter": "2030-01-02 09:00:00.75Z",
            "maxSimultaneousJobs": {"bucketName": "sweep@alice", "bucketMax": 2},
            "reservationIds": [UUID_A.upper(), UUID_B],
        },
        "extra": {
            "sshPubKeys": [
                f"{ECDSA_KEY} alice@laptop\n",
                f"{ED25519_KEY} alice",
            ],
            "emailOnQueue": [],
            "emailOnRun": ["alice@example.org"],
            "emailOnEnd": ["alice@example.org"],
            "emailOnHalt": [],
            "emailOnRestart": ["bob@example.org"],
        },
    },
}

FULL_JOB_CANONICAL = {
    "name": "full",
    "description": "every field",
    "request": {
        "resources": FULL_JOB["request"]["resources"],
        "docker": {
            "image": "gitlab+deploy-token-3:s3cr3t@gitlab.example.org:4567/group/sample:v1",
            "command": ["python", "train.py", "--epochs", "3"],
            "environment": {"A": "x", "B": 2, "C": True, "_D": ""},
            "storage": [
                {"containerPath": "/project/", "hostPath": "/project_ghent/"},
                {"hostPath": "tmpfs", "containerPath": "/scratch/", "sizeGb": 4},
                {"hostPath": "tmpfs", "containerPath": "/cache/", "sizeGb": 2},
                {"containerPath": "/root/.ssh/", "hostPath": ".ssh/"},
                {"containerPath": "/share/", "hostPath": "PROJECT_SHARE_AUTO"},
            ],
            "portMappings": [
                {"containerPort": 80, "hostPort": None, "hostIp": None},
                {"containerPort": 8888, "hostPort": 18888, "hostIp": "::1"},
            ],
            "projectGidVariableName": "PROJECT_GID",
            "workingDir": "/project/run/",
            "groupAdd": ["video", "render"],
            "user": "1000",
        },
        "scheduling": {
            "interactive": False,
            "restartable": True,
            "allowHaltWithoutSignal": True,
            "minDuration": "30 minutes",
            "maxDuration": "8 hours",
            "notBefore": "2030-01-01T08:00:00Z",
            "notAfter": "2030-01-02T09:00:00Z",
            "maxSimultaneousJobs": {"bucketName": "sweep@alice", "bucketMax": 2},
            "reservationIds": [UUID_A, UUID_B],
        },
        "extra": {
            "sshPubKeys": [
                f"{ECDSA_KEY} alice@laptop",
                f"{ED25519_KEY} alice",
            ],
            "emailOnQueue": [],
            "emailOnRun": ["alice@example.org"],
            "emailOnEnd": ["alice@example.org"],
            "emailOnHalt": [],
            "emailOnRestart": ["bob@example.org"],
        },
    },
}


def test_full_job_canonical_form():
    assert norm(FULL_JOB) == FULL_JOB_CANONICAL


def test_minimal_job_canonical_form():
    assert norm(minimal_job()) == {
        "name": "minimal",
        "description": None,
        "request": {
            "resources": {
                "cpus": 1,
                "gpus": 0,
                "cpuMemoryGb": 1,
                "gpuMemoryGb": None,
                "gpuModel": [],
                "features": [],
                "minCudaVersion": None,
                "clusterId": None,
                "slaveName": None,
                "slaveInstanceId": None,
            },
            "docker": {
                "image": "debian:stable",
                "command": [],
                "environment": {},
                "storage": [],
                "portMappings": [],
                "projectGidVariableName": None,
                "workingDir": None,
                "groupAdd": [],
                "user": None,
            },
            "scheduling": {
                "interactive": False,
                "restartable": False,
                "allowHaltWithoutSignal": False,
                "minDuration": "1 week",
                "maxDuration": "2 weeks",
                "notBefore": None,
                "notAfter": None,
                "maxSimultaneousJobs": None,
                "reservationIds": [],
            },
            "extra": {
                "sshPubKeys": [],
                "emailOnQueue": [],
                "emailOnRun": [],
                "emailOnEnd": [],
                "emailOnHalt": [],
                "emailOnRestart": [],
            },
        },
    }


def _snake(value):
    """Every schema key of a job in snake_case (environment names are data: left alone)."""
    from jobs.spec.checks import camel_to_snake

    if isinstance(value, list):
        return [_snake(v) for v in value]
    if not isinstance(value, dict):
        return value
    return {camel_to_snake(k): (v if k == "environment" else _snake(v)) for k, v in value.items()}


def test_snake_case_spelling_of_every_key():
    snake = _snake(FULL_JOB)
    assert snake["request"]["resources"]["cpu_memory_gb"] == 16
    assert snake["request"]["scheduling"]["max_simultaneous_jobs"]["bucket_max"] == 2
    assert snake["request"]["extra"]["ssh_pub_keys"]
    assert snake["request"]["docker"]["environment"] == FULL_JOB["request"]["docker"]["environment"]
    assert norm(snake) == FULL_JOB_CANONICAL


@pytest.mark.parametrize(
    "spelling", ["minDuration", "killableAfter", "min_duration", "killable_after"]
)
def test_min_duration_aliases(spelling):
    doc = with_changes(minimal_job(), {f"request.scheduling.{spelling}": "2 hours"})
    assert req(doc, "scheduling")["minDuration"] == "2 hours"


@pytest.mark.parametrize(
    ("spelling", "value"),
    [
        ("reservationIds", [UUID_A]),
        ("reservationId", UUID_A),
        ("reservation_id", [UUID_A]),
        ("reservation_ids", UUID_A.upper()),
        ("reservationIds", UUID_A),
    ],
)
def test_reservation_id_aliases_and_single_value(spelling, value):
    doc = with_changes(minimal_job(), {f"request.scheduling.{spelling}": value})
    assert req(doc, "scheduling")["reservationIds"] == [UUID_A]


@pytest.mark.parametrize(
    ("section", "key", "value", "expected"),
    [
        ("resources", "gpuModel", "V100", ["V100"]),
        ("resources", "features", "nvlink", ["nvlink"]),
        ("docker", "groupAdd", "video", ["video"]),
        (
            "docker",
            "portMappings",
            [80, 443],
            [
                {"containerPort": 80, "hostPort": None, "hostIp": None},
                {"containerPort": 443, "hostPort": None, "hostIp": None},
            ],
        ),
        (
            "docker",
            "storage",
            ["/project"],
            [{"containerPath": "/project/", "hostPath": "/project/"}],
        ),
        ("docker", "storage", [".ssh"], [{"containerPath": "/root/.ssh/", "hostPath": ".ssh/"}]),
    ],
)
def test_shorthands(section, key, value, expected):
    doc = with_changes(minimal_job(), {f"request.{section}.{key}": value})
    assert req(doc, section)[key] == expected


@pytest.mark.parametrize(("value", "expected"), [(2.0, 2), (2, 2)])
def test_integral_numbers_are_integers(value, expected):
    doc = with_changes(
        minimal_job(), {"request.resources.cpuMemoryGb": value, "request.resources.cpus": value}
    )
    resources = req(doc, "resources")
    assert resources["cpuMemoryGb"] == expected
    assert resources["cpus"] == expected
    assert type(resources["cpus"]) is int


def test_nulls_mean_absent():
    """GPULab stores (and the client may send) explicit nulls for optional values."""
    doc = with_changes(
        minimal_job(),
        {
            "description": None,
            "request.resources.gpuModel": None,
            "request.resources.clusterId": None,
            "request.docker.command": None,
            "request.docker.environment": None,
            "request.docker.storage": None,
            "request.docker.user": None,
            "request.scheduling": None,
            "request.extra": None,
        },
    )
    assert norm(doc) == norm(minimal_job())


def test_server_set_keys_are_ignored():
    doc = {
        **minimal_job(),
        "uuid": UUID_B,
        "owner": {"projectUrn": "urn:publicid:IDN+example.org+project+vision"},
        "deploymentEnvironment": "production",
        "state": {"status": "RUNNING"},
        "restartInfo": {"initialJobUuid": UUID_B, "restartCount": 0},
        "restart_info": None,
        "deployment_environment": "staging",
    }
    assert norm(doc) == norm(minimal_job())


def test_what_the_real_client_sends():
    """gpulab-cli submits model_dump(mode="json", exclude_none=True) of its parsed job: every
    default spelled out, plus owner and deploymentEnvironment."""
    sent = {
        "name": "cli-interactive-10min",
        "description": "Interactive job, max 10 minutes duration",
        "deploymentEnvironment": "production",
        "owner": {"projectUrn": "urn:publicid:IDN+example.org+project+vision"},
        "request": {
            "resources": {"cpus": 1, "gpus": 1, "cpuMemoryGb": 2, "features": [], "gpuModel": []},
            "docker": {
                "image": "debian:stable",
                "command": "bash -c 'sleep 600'",
                "environment": {},
                "storage": [{"containerPath": "/project/", "hostPath": "PROJECT_SHARE_AUTO/"}],
                "portMappings": [{"containerPort": 80}],
                "groupAdd": [],
            },
            "scheduling": {
                "interactive": True,
                "minDuration": None,
                "restartable": False,
                "allowHaltWithoutSignal": False,
                "reservationIds": [],
                "maxDuration": "10 minutes",
            },
            "extra": {
                "sshPubKeys": [f"{ECDSA_KEY} me@host"],
                "emailOnQueue": [],
                "emailOnRun": [],
                "emailOnEnd": ["me@example.org"],
                "emailOnHalt": [],
                "emailOnRestart": [],
            },
        },
    }
    doc = norm(sent)
    assert doc["request"]["docker"]["storage"] == [
        {"containerPath": "/project/", "hostPath": "PROJECT_SHARE_AUTO"}
    ]
    # the default minDuration (1 week) is capped at the 10 minute maxDuration
    assert doc["request"]["scheduling"]["minDuration"] == "10 minutes"
    assert doc["request"]["extra"]["sshPubKeys"] == [f"{ECDSA_KEY} me@host"]


def test_command_forms():
    def command(value):
        return req(with_changes(minimal_job(), {"request.docker.command": value}), "docker")[
            "command"
        ]

    assert command("") == []
    assert command([]) == []
    assert command("echo 'a b'") == "echo 'a b'"
    assert command(["echo", "a b"]) == ["echo", "a b"]
    assert command(["only"]) == ["only"]


def test_storage_normalisation():
    storage = [
        {"containerPath": "/data"},  # hostPath copies containerPath
        {"hostPath": "/project_scratch/x/"},  # containerPath copies hostPath
        {"containerPath": "/root/.ssh"},  # GPULab: this alone means the user's .ssh folder
        {"hostPath": ".ssh/", "containerPath": "/home/me/.ssh"},
        {"host_path": "tmpfs", "container_path": "/tmp/fast", "size_gb": 3},
    ]
    doc = norm(with_changes(minimal_job(), {"request.docker.storage": storage}))
    assert doc["request"]["docker"]["storage"] == [
        {"containerPath": "/data/", "hostPath": "/data/"},
        {"containerPath": "/project_scratch/x/", "hostPath": "/project_scratch/x/"},
        {"containerPath": "/root/.ssh/", "hostPath": ".ssh/"},
        {"containerPath": "/home/me/.ssh/", "hostPath": ".ssh/"},
        {"hostPath": "tmpfs", "containerPath": "/tmp/fast/", "sizeGb": 3},
    ]
    assert tmpfs_gb(doc["request"]) == 3
    assert tmpfs_gb(norm(FULL_JOB)["request"]) == 6
    assert tmpfs_gb(norm(minimal_job())["request"]) == 0


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("2030-01-01T00:00:00Z", "2030-01-01T00:00:00Z"),
        ("2030-01-01t00:00:00z", "2030-01-01T00:00:00Z"),
        ("2030-01-01 00:00:00+00:00", "2030-01-01T00:00:00Z"),
        ("2030-01-01T00:00:00+01:00", "2029-12-31T23:00:00Z"),
        ("2030-01-01T00:00:00-05:30", "2030-01-01T05:30:00Z"),
        ("2030-01-01T00:00:00.999999Z", "2030-01-01T00:00:00Z"),
        ("2020-02-29T12:00:00Z", "2020-02-29T12:00:00Z"),
    ],
)
def test_times_are_normalised_to_utc(given, expected):
    doc = with_changes(minimal_job(), {"request.scheduling.notBefore": given})
    assert req(doc, "scheduling")["notBefore"] == expected


def test_durations_kept_as_given():
    doc = with_changes(
        minimal_job(),
        {"request.scheduling.minDuration": "1.5 HOURS", "request.scheduling.maxDuration": "3days"},
    )
    scheduling = req(doc, "scheduling")
    assert (scheduling["minDuration"], scheduling["maxDuration"]) == ("1.5 HOURS", "3days")
    request = norm(doc)["request"]
    assert duration_seconds(request, "minDuration") == 5400
    assert duration_seconds(request, "maxDuration") == 3 * 86400
    with pytest.raises(KeyError):
        duration_seconds(request, "notBefore")


@pytest.mark.parametrize(
    ("scheduling", "expected"),
    [
        ({}, ("1 week", "2 weeks")),
        ({"maxDuration": "1 hour"}, ("1 hour", "1 hour")),  # default min capped at max
        ({"minDuration": "3 weeks"}, ("2 weeks", "2 weeks")),  # given min capped at default max
        ({"minDuration": "0 seconds", "maxDuration": "60 s"}, ("0 seconds", "60 s")),
        ({"minDuration": "1 day", "maxDuration": "1 day"}, ("1 day", "1 day")),
    ],
)
def test_min_duration_is_capped_at_max_duration(scheduling, expected):
    doc = with_changes(minimal_job(), {"request.scheduling": scheduling})
    result = req(doc, "scheduling")
    assert (result["minDuration"], result["maxDuration"]) == expected


def test_site_defaults():
    defaults = SpecDefaults(min_duration="1 hour", max_duration="1 day")
    scheduling = norm(minimal_job(), defaults)["request"]["scheduling"]
    assert (scheduling["minDuration"], scheduling["maxDuration"]) == ("1 hour", "1 day")


@pytest.mark.parametrize(
    ("min_duration", "max_duration"), [("1d", "2 weeks"), ("1 week", "2w"), ("0 s", "59 seconds")]
)
def test_bad_site_defaults_fail_at_once(min_duration, max_duration):
    with pytest.raises(ValueError):
        SpecDefaults(min_duration=min_duration, max_duration=max_duration)


IDEMPOTENCE_CASES = {
    "minimal": minimal_job(),
    "full": FULL_JOB,
    "snake": _snake(FULL_JOB),
    "shorthands": with_changes(
        minimal_job(),
        {
            "request.resources.gpuModel": "A100",
            "request.docker.storage": [
                "/project",
                ".ssh",
                {"hostPath": "PROJECT_SHARE_AUTO/", "containerPath": "/p"},
            ],
            "request.docker.portMappings": [22],
            "request.docker.command": "",
            "request.scheduling.killableAfter": "5 weeks",
            "request.scheduling.reservationId": UUID_A.upper(),
            "request.scheduling.notAfter": "2031-06-01T12:00:00.5+02:00",
        },
    ),
}


@pytest.mark.parametrize("doc", IDEMPOTENCE_CASES.values(), ids=list(IDEMPOTENCE_CASES))
def test_normalising_twice_changes_nothing(doc):
    once = norm(doc)
    assert norm(once) == once
    # and the canonical form survives a JSON round trip (as stored in the database)
    assert norm(json.loads(json.dumps(once))) == once


def test_normalising_does_not_modify_the_input():
    original = json.loads(json.dumps(FULL_JOB))
    norm(original)
    assert original == FULL_JOB


def test_parse_job_document_accepts_text_bytes_and_dicts():
    text = json.dumps(FULL_JOB)
    for source in (text, text.encode(), "\ufeff" + text, b"\xef\xbb\xbf" + text.encode(), FULL_JOB):
        assert parse_job_document(source, defaults=DEFAULTS) == (FULL_JOB_CANONICAL, False)


def test_load_json_keeps_the_last_duplicate_key():
    assert load_json('{"a": 1, "a": 2}') == {"a": 2}


@pytest.mark.parametrize("key", [" ", "\n"])
def test_blank_ssh_keys_are_refused_after_stripping(key):
    doc = with_changes(minimal_job(), {"request.extra.sshPubKeys": [key]})
    assert errors_of(normalize_job, doc, defaults=DEFAULTS) == [
        ("request.extra.sshPubKeys[0]", "must not be empty")
    ]


def test_times_need_ascii_digits():
    doc = with_changes(minimal_job(), {"request.scheduling.notBefore": "٢٠٣٠-01-01T00:00:00Z"})
    assert errors_of(normalize_job, doc, defaults=DEFAULTS)[0][0] == "request.scheduling.notBefore"
