"""API test fixtures: clients authenticated by API token for each kind of caller, and helpers
that put jobs into a state (as the scheduler and runtime would) without Docker."""

import copy
import json

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from core.timefmt import utc_z
from jobs.models import JobExplanation
from tests.conftest import HELLO_WORLD

API = "/api/gpulab/v4.0/"
PORTAL = "/api/portal/"
SECRET_IMAGE = "user:s3cretPW@registry.example.org:5000/team/img:1"


class RecordingClient(APIClient):
    """An APIClient that keeps every response, so tests can check all bodies at once."""

    def __init__(self, *args, log=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.log = log if log is not None else []

    def request(self, **kwargs):
        response = super().request(**kwargs)
        self.log.append(response)
        return response


@pytest.fixture(autouse=True)
def _fast_passwords(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def responses():
    """Every response any client of this test received."""
    return []


def _client(responses, user=None):
    client = RecordingClient(log=responses)
    if user is not None:
        from accounts.tokens import api_token_rotate

        _, key = api_token_rotate(user=user)
        client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


@pytest.fixture
def anon_client(db, responses):
    return _client(responses)


@pytest.fixture
def member_client(member, responses):
    return _client(responses, member)


@pytest.fixture
def outsider_client(outsider, responses):
    return _client(responses, outsider)


@pytest.fixture
def admin_client(admin_user, responses):
    return _client(responses, admin_user)


@pytest.fixture
def clients(anon_client, member_client, outsider_client, admin_client):
    return {
        "anonymous": anon_client,
        "member": member_client,
        "outsider": outsider_client,
        "admin": admin_client,
    }


def body(document) -> str:
    return json.dumps(document)


@pytest.fixture
def submit_api(member_client, slave, project):
    """POST a document as the member; returns the response."""

    def do(document=None, *, client=None, query="", **extra):
        document = copy.deepcopy(document if document is not None else HELLO_WORLD)
        return (client or member_client).post(
            API + "jobs" + query, data=body(document), content_type="application/json", **extra
        )

    return do


def put_state(job, status, *, slave=None, gpu_ids=(), cpu_ids=(), **fields):
    """Move a job to ``status`` directly (what the scheduler/runtime would have done)."""
    now = timezone.now()
    stamp = utc_z(now)
    times = dict(job.event_times or {})
    chain = {
        "ASSIGNED": ["ASSIGNED"],
        "STARTING": ["ASSIGNED", "STARTING"],
        "RUNNING": ["ASSIGNED", "STARTING", "RUNNING"],
        "MUSTHALT": ["ASSIGNED", "STARTING", "RUNNING", "MUSTHALT"],
        "FINISHED": ["ASSIGNED", "STARTING", "RUNNING", "FINISHED"],
        "FAILED": ["FAILED"],
        "CANCELLED": ["CANCELLED"],
        "HALTED": ["ASSIGNED", "STARTING", "RUNNING", "MUSTHALT", "HALTING", "HALTED"],
        "DELETED": ["ASSIGNED", "STARTING", "RUNNING", "FINISHED", "DELETED"],
    }.get(status, [status])
    for name in chain:
        times[name] = stamp
    times["statusUpdated"] = stamp
    job.status = status
    job.status_updated = now
    job.event_times = times
    if slave is not None:
        job.slave = slave
        job.gpu_ids = list(gpu_ids)
        job.cpu_ids = list(cpu_ids)
    explanations = fields.pop("queued_explanations", None)
    for key, value in fields.items():
        setattr(job, key, value)
    job.save()
    if explanations is not None:  # their own table (jobs.models.JobExplanation)
        JobExplanation.objects.update_or_create(job=job, defaults={"lines": explanations})
    return job


@pytest.fixture
def running_job(submit, slave):
    job = submit()
    return put_state(
        job,
        "RUNNING",
        slave=slave,
        gpu_ids=[0],
        cpu_ids=[0, 1],
        container_id="c0ffee",
        port_mappings=[{"containerPort": 80, "hostPort": 32768, "hostIp": "0.0.0.0"}],
    )


@pytest.fixture
def finished_job(submit, slave):
    job = submit()
    return put_state(job, "FINISHED", slave=slave, gpu_ids=[1], cpu_ids=[2, 3], exit_code=0)
