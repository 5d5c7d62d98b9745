"""Every count and size a submission can carry is bounded by a site setting, checked before
anything is expanded or written: a 400 naming the field (or a 413 for a body), no row left
behind, and the huge ones answered in well under a second (jobs/spec/checks.py,
docs/configuration.md "Request bounds")."""

import copy
import json
import time

import pytest
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from gangs.models import JobGang
from jobs.models import Job, JobEvent
from tests.api.conftest import API, PORTAL
from tests.conftest import HELLO_WORLD

pytestmark = pytest.mark.django_db

PORTS = "request.docker.portMappings"
COMMAND = "request.docker.command"


@pytest.fixture
def nothing_written(db):
    before = (Job.objects.count(), JobEvent.objects.count(), JobGang.objects.count())
    yield
    assert (Job.objects.count(), JobEvent.objects.count(), JobGang.objects.count()) == before


def v2(**docker) -> dict:
    document = copy.deepcopy(HELLO_WORLD)
    document["request"]["docker"].update(docker)
    return document


def openpai(*roles: dict, **top) -> dict:
    base = {
        "name": "worker",
        "taskNumber": 2,
        "cpuNumber": 1,
        "memoryMB": 1024,
        "gpuNumber": 0,
        "command": "echo $PAI_TASK_INDEX",
    }
    return {
        "jobName": "bounded",
        "image": "debian:stable",
        "taskRoles": [{**base, **role} for role in roles or ({},)],
        **top,
    }


def post(client, document, path=API + "jobs"):
    return client.post(path, data=json.dumps(document), content_type="application/json")


def refused(response) -> list[str]:
    assert response.status_code == 400, response.content
    return response.json()["errors"]


def timed(client, document, path=API + "jobs"):
    post(client, {"name": "warm-up"})  # imports and the token lookup, not the check, are slow
    started = time.perf_counter()
    response = post(client, document, path)
    return response, time.perf_counter() - started


def openssh(key) -> str:
    return key.public_key().public_bytes(Encoding.OpenSSH, PublicFormat.OpenSSH).decode()


# --- the two that hurt operators: refused at once, nothing written -----------------------------


def test_5000_port_mappings_are_refused_in_well_under_a_second(member_client, nothing_written):
    ports = [{"containerPort": 1000 + n} for n in range(5000)]
    response, seconds = timed(member_client, v2(portMappings=ports))
    assert refused(response) == [
        f"{PORTS}: must have at most 64 port mappings (this site's limit), not 5000"
    ]
    assert seconds < 1, seconds


def test_100000_task_openpai_config_is_refused_in_well_under_a_second(
    member_client, slave, nothing_written
):
    response, seconds = timed(member_client, openpai({"taskNumber": 100_000}))
    assert refused(response) == [
        "taskRoles[0].taskNumber: must be <= 256 (the most tasks of one job: this site's limit)"
    ]
    assert seconds < 1, seconds


# --- ports --------------------------------------------------------------------------------


def test_ports_per_job_follow_the_setting(member_client, slave, settings, nothing_written):
    settings.PORTAL_MAX_PORTS_PER_JOB = 3
    errors = refused(post(member_client, v2(portMappings=[80, 81, 82, 83])))
    assert errors == [f"{PORTS}: must have at most 3 port mappings (this site's limit), not 4"]
    # v1 names its own field
    v1 = {
        "jobDefinition": {
            "dockerImage": "debian:stable",
            "resources": {"cpuCores": 1, "gpus": 0, "systemMemory": 1024},
            "portMappings": [{"containerPort": n} for n in range(80, 84)],
        }
    }
    assert refused(post(member_client, v1)) == [
        "jobDefinition.portMappings: must have at most 3 port mappings (this site's limit), not 4"
    ]


def test_ports_per_task_and_per_gang(member_client, slave, settings, nothing_written):
    one_port_too_many = [{"label": "http", "beginAt": 0, "portNumber": 65}]
    assert refused(post(member_client, openpai({"portList": one_port_too_many}))) == [
        "taskRoles[0].portList: must open at most 64 ports per task (this site's limit), not 65"
    ]
    labels = [{"label": f"p{n}", "beginAt": 0, "portNumber": 1} for n in range(5000)]
    assert refused(post(member_client, openpai({"portList": labels}))) == [
        "taskRoles[0].portList: must open at most 64 ports per task (this site's limit), "
        "not at least 5000"
    ]
    settings.PORTAL_MAX_PORTS_PER_GANG = 7
    two_ports = [{"label": "http", "beginAt": 0, "portNumber": 2}]
    assert refused(post(member_client, openpai({"taskNumber": 4, "portList": two_ports}))) == [
        "taskRoles: must open at most 7 ports in all tasks together (this site's limit), not 8"
    ]


# --- tasks of a gang ---------------------------------------------------------------------------


def test_tasks_of_all_roles_together_follow_the_setting(
    member_client, slave, settings, nothing_written
):
    settings.PORTAL_MAX_GANG_TASKS = 4
    doc = openpai({"name": "a", "taskNumber": 3}, {"name": "b", "taskNumber": 2})
    assert refused(post(member_client, doc)) == [
        "taskRoles: must have at most 4 tasks in all (this site's limit), not 5"
    ]


def test_a_gang_the_slaves_could_never_hold_at_once_is_refused(
    member_client, slave, nothing_written
):
    """The slave has 4 GPUs: 5 one-GPU tasks can never start together, nor 3 + 2 of two roles."""
    errors = refused(post(member_client, openpai({"taskNumber": 5, "gpuNumber": 1})))
    assert errors == [
        "taskRoles[0].taskNumber: the job's tasks start together and can never all fit: 5 tasks "
        "of 1 GPU(s), 1 CPU(s) and 1 GB each must run at once, but the site can place at most 4 "
        "of them at once (the slaves that could run one have 4 GPUs)"
    ]
    doc = openpai(
        {"name": "a", "taskNumber": 3, "gpuNumber": 1},
        {"name": "b", "taskNumber": 2, "gpuNumber": 1},
    )
    assert refused(post(member_client, doc)) == [
        "taskRoles: the job's tasks start together and can never all fit: the tasks together "
        "need 5 GPUs at once, the registered slaves that could run them have 4"
    ]
    # Fixed host ports: one task per slave.
    fixed = [{"label": "ssh", "beginAt": 20022, "portNumber": 1}]
    errors = refused(post(member_client, openpai({"taskNumber": 2, "portList": fixed})))
    assert errors[0].startswith("taskRoles[0].taskNumber: the job's tasks start together")
    assert "at most 1 of them at once" in errors[0]


# --- commands ---------------------------------------------------------------------------------


def test_command_length_and_words(member_client, slave, settings, nothing_written):
    long_text = "echo " + "x" * 200_000
    assert refused(post(member_client, v2(command=long_text))) == [
        f"{COMMAND}: must be at most 32768 characters (this site's limit), not 200005"
    ]
    response, seconds = timed(member_client, v2(command=["w"] * 100_000))
    assert refused(response) == [
        f"{COMMAND}: must have at most 4096 words (this site's limit), not 100000"
    ]
    assert seconds < 1, seconds
    settings.PORTAL_MAX_COMMAND_WORDS = 3
    assert refused(post(member_client, v2(command="echo 'a b' c d"))) == [
        f"{COMMAND}: must have at most 3 words (this site's limit), not 4"
    ]


def test_a_blank_command_is_the_image_cmd(member_client, slave):
    # Spaces only are no words, like "": the image's CMD (the word count crashed on it: a 500).
    assert post(member_client, v2(command="   ")).status_code == 201


def test_command_bounds_are_inclusive(member_client, slave, settings):
    settings.PORTAL_MAX_COMMAND_CHARS = 10
    settings.PORTAL_MAX_COMMAND_WORDS = 2
    assert post(member_client, v2(command=["echo", "123456"])).status_code == 201
    assert refused(post(member_client, v2(command=["echo", "1234567"]))) == [
        f"{COMMAND}: must be at most 10 characters (this site's limit), not 11"
    ]
    assert post(member_client, v2(command="echo 12345")).status_code == 201
    openpai_long = openpai({"taskNumber": 1, "command": "echo 1234567"})
    assert refused(post(member_client, openpai_long)) == [
        "taskRoles[0].command: must be at most 10 characters (this site's limit), not 12"
    ]


# --- e-mail recipients ------------------------------------------------------------------------


def test_email_recipients(member_client, slave, settings, nothing_written):
    many = [f"user{n}@example.org" for n in range(5000)]
    document = v2()
    document["request"]["extra"] = {"emailOnEnd": many}
    assert refused(post(member_client, document)) == [
        "request.extra.emailOnEnd: must name at most 20 e-mail recipients per job "
        "(this site's limit), not 5000"
    ]
    # Distinct addresses over every list count together.
    document["request"]["extra"] = {"emailOnRun": many[:11], "emailOnEnd": many[5:21]}
    assert refused(post(member_client, document)) == [
        "request.extra.emailOnEnd: must name at most 20 e-mail recipients per job "
        "(this site's limit), not 21"
    ]
    # v1
    v1 = {
        "jobDefinition": {
            "dockerImage": "debian:stable",
            "resources": {"cpuCores": 1, "gpus": 0, "systemMemory": 1024},
        },
        "emails_end": many[:21],
    }
    assert refused(post(member_client, v1)) == [
        "emails_end: must name at most 20 e-mail recipients per job (this site's limit), not 21"
    ]


# --- SSH keys and numbers ---------------------------------------------------------------------


def test_ssh_keys_must_be_openssh_public_keys(member_client, slave, nothing_written):
    for bad in ("garbage", "ssh-ed25519 AAAAC3Nza me@laptop", "ssh-rsa " + "A" * 40):
        document = v2()
        document["request"]["extra"] = {"sshPubKeys": [bad]}
        [error] = refused(post(member_client, document))
        assert error.startswith("request.extra.sshPubKeys[0]: must be an OpenSSH public key")
    v1 = {
        "jobDefinition": {
            "dockerImage": "debian:stable",
            "resources": {"cpuCores": 1, "gpus": 0, "systemMemory": 1024},
        },
        "ssh_pubkeys": ["garbage"],
    }
    [error] = refused(post(member_client, v1))
    assert error.startswith("ssh_pubkeys[0]: must be an OpenSSH public key")


def test_real_keys_of_every_common_type_are_accepted(member_client, slave):
    keys = [
        openssh(ed25519.Ed25519PrivateKey.generate()) + " me@laptop",
        openssh(ec.generate_private_key(ec.SECP256R1())),
        openssh(rsa.generate_private_key(public_exponent=65537, key_size=2048)) + "\n",
    ]
    document = v2()
    document["request"]["extra"] = {"sshPubKeys": keys}
    response = post(member_client, document)
    assert response.status_code == 201, response.content
    stored = Job.objects.get(uuid=response.content.decode())
    assert stored.request["extra"]["sshPubKeys"] == [key.strip() for key in keys]


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (("cpus", "1"), 'request.resources.cpus: must be an integer, not a string ("1")'),
        (("gpus", True), "request.resources.gpus: must be an integer, not true"),
        (
            ("cpuMemoryGb", "2"),
            'request.resources.cpuMemoryGb: must be an integer, not a string ("2")',
        ),
    ],
)
def test_numbers_must_be_numbers(member_client, slave, nothing_written, change, expected):
    document = v2()
    key, value = change
    document["request"]["resources"][key] = value
    assert refused(post(member_client, document)) == [expected]


def test_numbers_must_be_numbers_in_v1_and_openpai(member_client, slave, nothing_written):
    v1 = {
        "jobDefinition": {
            "dockerImage": "debian:stable",
            "resources": {"cpuCores": "1", "gpus": 0, "systemMemory": "1024"},
        }
    }
    assert refused(post(member_client, v1)) == [
        'jobDefinition.resources.systemMemory: must be a number of MB, not a string ("1024")'
    ]
    v1["jobDefinition"]["resources"]["systemMemory"] = 1024
    assert refused(post(member_client, v1)) == [
        'jobDefinition.resources.cpuCores: must be an integer, not a string ("1")'
    ]
    assert refused(post(member_client, openpai({"cpuNumber": "2"}))) == [
        'taskRoles[0].cpuNumber: must be an integer, not a string ("2")'
    ]


# --- arrays, Tapis, bodies --------------------------------------------------------------------


def test_array_items_are_bounded_too(member_client, slave, nothing_written):
    body = {"jobs": [v2(), v2(portMappings=list(range(1000, 1065)))]}
    assert refused(post(member_client, body, PORTAL + "jobs/array")) == [
        f"jobs[1].{PORTS}: must have at most 64 port mappings (this site's limit), not 65"
    ]


def test_tapis_command_is_bounded_under_the_arguments(
    member, project, slave, nothing_written, settings
):
    from tapis.services import app_create
    from tests.tapis.conftest import APP, TAPIS, seed_request, tapis_client

    app_create(user=member, definition=copy.deepcopy(APP))
    settings.PORTAL_MAX_COMMAND_CHARS = 100
    request = seed_request()
    request["parameterSet"]["appArgs"].append({"arg": "x" * 200})
    answer = tapis_client(member).post(TAPIS + "jobs/submit", request, format="json")
    assert answer.status_code == 400, answer.content
    [error] = answer.json()["result"]["errors"]
    assert error.startswith(
        "parameterSet.appArgs: with the app's command, must be at most 100 characters"
    )


def test_body_size_per_path(member_client, slave, settings, nothing_written):
    settings.PORTAL_MAX_BODY_BYTES = 2000
    settings.PORTAL_MAX_BODY_BYTES_BY_PATH = {PORTAL + "jobs/array": 50_000}
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 50_000
    big = v2()
    big["description"] = "x" * 3000
    big["request"]["resources"]["cpus"] = 0
    response = post(member_client, big)
    assert response.status_code == 413
    assert response.json() == {"error": "request body too large (at most 2000 bytes)"}
    # The array's own, larger limit: the same document passes the size check there (and is
    # refused for what it asks).
    answer = post(member_client, {"jobs": [big, big]}, PORTAL + "jobs/array")
    assert refused(answer) == [
        "jobs[0].request.resources.cpus: must be > 0",
        "jobs[1].request.resources.cpus: must be > 0",
    ]
    # Not under /api/: a text answer, still before anything reads the body.
    page = member_client.post("/accounts/login/", data={"username": "x" * 3000})
    assert page.status_code == 413
    assert page["Content-Type"].startswith("text/plain")


def test_body_limits_by_path_setting(monkeypatch, settings):
    from core.body_limits import body_limit
    from portal.envconfig import env_bytes_by_prefix

    monkeypatch.setenv("LIMITS", "/api/portal/jobs/array=4194304, /api/portal/=8000")
    by_path = env_bytes_by_prefix("LIMITS")
    assert by_path == {"/api/portal/jobs/array": 4194304, "/api/portal/": 8000}
    settings.PORTAL_MAX_BODY_BYTES = 1000
    settings.PORTAL_MAX_BODY_BYTES_BY_PATH = by_path
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 4194304
    assert body_limit(PORTAL + "jobs/array") == 4194304  # the longest prefix wins
    assert body_limit(PORTAL + "convert") == 8000
    assert body_limit(API + "jobs") == 1000
    for bad in ("4194304", "/api/x=lots", "api/x=10"):
        monkeypatch.setenv("LIMITS", bad)
        with pytest.raises(ValueError, match="LIMITS"):
            env_bytes_by_prefix("LIMITS")


# --- an ordinary request at every bound passes --------------------------------------------------


def test_a_request_at_every_bound_is_accepted(member_client, slave):
    recipients = [f"user{n}@example.org" for n in range(20)]
    document = v2(
        portMappings=[{"containerPort": 1000 + n} for n in range(64)],
        command=["echo", "x" * (32768 - 4 - 4094), *(["y"] * 4094)],
    )
    document["request"]["extra"] = {
        "emailOnRun": recipients[:10],
        "emailOnEnd": recipients,
        "sshPubKeys": [openssh(ed25519.Ed25519PrivateKey.generate())],
    }
    response = post(member_client, document)
    assert response.status_code == 201, response.content
    job = Job.objects.get(uuid=response.content.decode())
    assert len(job.request["docker"]["portMappings"]) == 64
    assert len(job.request["docker"]["command"]) == 4096
    assert sum(map(len, job.request["docker"]["command"])) == 32768


def test_a_gang_at_the_bounds_is_accepted(member_client, slave, settings):
    """4 one-GPU tasks on the 4-GPU slave, 8 ports with PORTAL_MAX_PORTS_PER_GANG 8."""
    settings.PORTAL_MAX_PORTS_PER_GANG = 8
    settings.PORTAL_MAX_GANG_TASKS = 4
    two_ports = [{"label": "http", "beginAt": 0, "portNumber": 2}]
    response = post(
        member_client, openpai({"taskNumber": 4, "gpuNumber": 1, "portList": two_ports})
    )
    assert response.status_code == 201, response.content
    assert JobGang.objects.count() == 1 and Job.objects.count() == 4
