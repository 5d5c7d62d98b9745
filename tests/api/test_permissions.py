"""Permission matrix: anonymous / non-member / member / admin x every endpoint and verb.

Anonymous callers get only version, clusters and slaves (and the OpenAPI schema and docs);
everyone logged in sees every job (others' sanitised); only project members (and admins) act on
a project's jobs or read their logs and history; only admins manage reservations and use
``real``/``force`` deletion."""

import json

import pytest
from django.utils import timezone

from jobs.models import Job
from tests.api.conftest import API, PORTAL, put_state
from tests.conftest import HELLO_WORLD

pytestmark = pytest.mark.django_db

ROLES = ("anonymous", "outsider", "member", "admin")
VISION = "urn:publicid:IDN+gpuportal.local+project+vision"
SUBMISSION = {**HELLO_WORLD, "owner": {"projectUrn": VISION}}
RESERVATION = {"name": "r2", "cluster_id": 1, "start": "2030-01-01T00:00:00Z"}
RESERVATION["end"] = "2030-01-02T00:00:00Z"

# name, method, path, body (JSON object or text), expected status per role
MATRIX = [
    ("version", "get", API + "version", None, (200, 200, 200, 200)),
    ("clusters", "get", API + "clusters", None, (200, 200, 200, 200)),
    ("slaves", "get", API + "slaves", None, (200, 200, 200, 200)),
    ("list jobs", "get", API + "jobs", None, (401, 200, 200, 200)),
    ("submit", "post", API + "jobs", SUBMISSION, (401, 403, 201, 201)),
    ("get job", "get", API + "jobs/{queued}", None, (401, 200, 200, 200)),
    ("debug", "get", API + "jobs/{queued}/debug", None, (401, 403, 200, 200)),
    ("log", "get", API + "jobs/{queued}/log", None, (401, 403, 200, 200)),
    ("hold", "put", API + "jobs/{queued}/state/status", "ONHOLD", (401, 403, 200, 200)),
    ("cancel", "put", API + "jobs/{queued}/state/status", "CANCELLED", (401, 403, 200, 200)),
    ("release", "put", API + "jobs/{onhold}/state/status", "QUEUED", (401, 403, 200, 200)),
    ("halt", "put", API + "jobs/{running}/state/status", "MUSTHALT", (401, 403, 200, 200)),
    # GPULab: an ended job is removed only with finished=true (or by an admin's real delete).
    ("delete", "delete", API + "jobs/{finished}", None, (401, 403, 409, 409)),
    ("revoke", "delete", API + "jobs/{onhold}", None, (401, 403, 204, 204)),
    (
        "delete finished",
        "delete",
        API + "jobs/{finished}?finished=true",
        None,
        (401, 403, 204, 204),
    ),
    ("delete real", "delete", API + "jobs/{finished}?real=true", None, (401, 403, 403, 204)),
    ("delete force", "delete", API + "jobs/{queued}?force=true", None, (401, 403, 403, 204)),
    ("explain", "get", PORTAL + "jobs/{queued}/explain", None, (401, 200, 200, 200)),
    ("convert", "post", PORTAL + "convert", HELLO_WORLD, (401, 200, 200, 200)),
    ("reservations", "get", PORTAL + "reservations", None, (401, 200, 200, 200)),
    ("reservation", "get", PORTAL + "reservations/{reservation}", None, (401, 200, 200, 200)),
    ("create reservation", "post", PORTAL + "reservations", RESERVATION, (401, 403, 403, 201)),
    (
        "update reservation",
        "patch",
        PORTAL + "reservations/{reservation}",
        {"name": "renamed"},
        (401, 403, 403, 200),
    ),
    (
        "delete reservation",
        "delete",
        PORTAL + "reservations/{reservation}",
        None,
        (401, 403, 403, 204),
    ),
    ("projects", "get", PORTAL + "projects", None, (401, 200, 200, 200)),
    ("me", "get", PORTAL + "me", None, (401, 200, 200, 200)),
    ("token", "get", PORTAL + "token", None, (401, 200, 200, 200)),
    ("rotate token", "post", PORTAL + "token", None, (401, 201, 201, 201)),
    ("schema", "get", "/api/schema/", None, (200, 200, 200, 200)),
    ("docs", "get", "/api/docs/", None, (200, 200, 200, 200)),
]


@pytest.fixture
def objects(submit, slave, project):
    from reservations.services import reservation_create

    now = timezone.now()
    reservation = reservation_create(
        name="r", cluster=slave.cluster, start=now, end=now + timezone.timedelta(hours=1)
    )
    return {
        "queued": submit().uuid,
        "onhold": submit(hold=True).uuid,
        "running": put_state(submit(), "RUNNING", slave=slave, gpu_ids=[0]).uuid,
        "finished": put_state(submit(), "FINISHED", slave=slave, gpu_ids=[0]).uuid,
        "reservation": reservation.uuid,
    }


def call(client, method, path, body):
    if body is None:
        return getattr(client, method)(path)
    if isinstance(body, str):
        return getattr(client, method)(path, data=body, content_type="text/plain")
    return getattr(client, method)(path, data=json.dumps(body), content_type="application/json")


@pytest.mark.parametrize("role_index,role", list(enumerate(ROLES)))
@pytest.mark.parametrize("name,method,path,body,expected", MATRIX, ids=[m[0] for m in MATRIX])
def test_permission_matrix(clients, objects, role_index, role, name, method, path, body, expected):
    response = call(clients[role], method, path.format(**objects), body)
    assert response.status_code == expected[role_index], (role, name, response.content[:300])
    if response.status_code == 401:
        assert response["WWW-Authenticate"].startswith("Token")


def test_refused_actions_change_nothing(outsider_client, objects):
    before = {j.uuid: (j.status, j.event_times) for j in Job.objects.all()}
    for body in ("CANCELLED", "ONHOLD", "MUSTHALT"):
        call(outsider_client, "put", f"{API}jobs/{objects['queued']}/state/status", body)
    call(outsider_client, "delete", f"{API}jobs/{objects['finished']}", None)
    after = {j.uuid: (j.status, j.event_times) for j in Job.objects.all()}
    assert before == after


def test_session_writes_need_csrf(member, slave, project):
    from rest_framework.test import APIClient

    client = APIClient(enforce_csrf_checks=True)
    client.force_login(member)
    assert client.get(API + "jobs").status_code == 200
    refused = client.post(
        API + "jobs", data=json.dumps(SUBMISSION), content_type="application/json"
    )
    assert refused.status_code == 403
    assert "CSRF" in refused.json()["error"]
    assert Job.objects.count() == 0
    # with the token from the cookie, the same request goes through
    client.get("/api/portal/me")  # any page; fetch a CSRF cookie the usual way
    from django.middleware.csrf import _get_new_csrf_string, _mask_cipher_secret

    secret = _get_new_csrf_string()
    client.cookies["csrftoken"] = secret
    accepted = client.post(
        API + "jobs",
        data=json.dumps(SUBMISSION),
        content_type="application/json",
        HTTP_X_CSRFTOKEN=_mask_cipher_secret(secret),
    )
    assert accepted.status_code == 201, accepted.content
    assert Job.objects.count() == 1
