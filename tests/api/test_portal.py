"""Portal endpoints beside the GPULab ones: version, token, projects, me, reservations, convert,
and the OpenAPI schema and docs (served without any CDN)."""

import re

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from reservations.models import Reservation
from tests.api.conftest import API, PORTAL

pytestmark = pytest.mark.django_db


def test_version(anon_client, settings):
    data = anon_client.get(API + "version").json()
    assert data["latest_client_version"] == settings.PORTAL_LATEST_CLIENT_VERSION
    assert data["portal_version"] == settings.PORTAL_VERSION


def test_routes_take_an_optional_trailing_slash(member_client, anon_client):
    assert anon_client.get(API + "version/").status_code == 200
    assert member_client.get(API + "jobs/").status_code == 200
    assert member_client.get(PORTAL + "token/").status_code == 200


def test_token_lifecycle(member):
    client = APIClient()
    client.force_login(member)
    assert client.get(PORTAL + "token").json()["token"] is None
    answer = client.post(PORTAL + "token").json()
    created = answer["token"]
    assert created.startswith(answer["prefix"]) and len(answer["prefix"]) == 8
    shown = client.get(PORTAL + "token").json()
    assert shown["token"] is None  # shown once, at creation
    assert shown["prefix"] == answer["prefix"] and shown["created"] == answer["created"]
    token_client = APIClient()
    token_client.credentials(HTTP_AUTHORIZATION=f"Token {created}")
    assert token_client.get(API + "jobs").status_code == 200
    assert client.get(PORTAL + "token").json()["last_used"] is not None
    rotated = client.post(PORTAL + "token").json()["token"]
    assert rotated != created
    assert token_client.get(API + "jobs").status_code == 401  # the old token stopped working


def test_wrong_token_is_401(anon_client):
    anon_client.credentials(HTTP_AUTHORIZATION="Token nope")
    response = anon_client.get(API + "jobs")
    assert response.status_code == 401
    assert response.json() == {"error": "Invalid token."}


def test_projects_and_me(member_client, admin_client, member, project, other_project):
    mine = member_client.get(PORTAL + "projects").json()
    assert [p["name"] for p in mine] == ["vision"]
    assert mine[0]["my_role"] == "member"
    assert mine[0]["members"] == [
        {
            "username": "alice",
            "urn": "urn:publicid:IDN+gpuportal.local+user+alice",
            "role": "member",
        }
    ]
    assert [p["name"] for p in admin_client.get(PORTAL + "projects").json()] == ["speech", "vision"]
    me = member_client.get(PORTAL + "me").json()
    assert me["memberships"] == [
        {
            "project": "vision",
            "project_urn": "urn:publicid:IDN+gpuportal.local+project+vision",
            "role": "member",
        }
    ]
    assert me["is_admin"] is False


def test_reservation_crud_fires_ticks(
    admin_client,
    member_client,
    outsider_client,
    slave,
    project,
    member,
    recorded_tasks,
    django_capture_on_commit_callbacks,
):
    now = timezone.now()
    payload = {
        "name": "course",
        "description": "exam week",
        "cluster_id": 1,
        "slaves": ["gpu1"],
        "gpu_count": 2,
        "start": now.isoformat(),
        "end": (now + timezone.timedelta(days=1)).isoformat(),
        "projects": ["urn:publicid:IDN+gpuportal.local+project+vision"],
        "users": ["bob"],
    }
    with django_capture_on_commit_callbacks(execute=True):
        created = admin_client.post(PORTAL + "reservations", data=payload, format="json")
    assert created.status_code == 201, created.content
    data = created.json()
    assert data["slaves"] == ["gpu1"] and data["gpu_count"] == 2 and data["active"] is True
    assert data["projects"] == ["urn:publicid:IDN+gpuportal.local+project+vision"]
    assert data["users"] == ["urn:publicid:IDN+gpuportal.local+user+bob"]
    assert recorded_tasks.count(("jobs.tasks.scheduler_tick", ())) == 1
    path = PORTAL + "reservations/" + data["uuid"]

    assert member_client.get(path).json()["entitled"] is True  # through the project
    assert outsider_client.get(path).json()["entitled"] is True  # as a user
    assert member_client.get(path).json()["users"] is None  # only admins see who

    with django_capture_on_commit_callbacks(execute=True):
        changed = admin_client.patch(path, data={"name": "renamed", "users": []}, format="json")
    assert changed.status_code == 200, changed.content
    assert changed.json()["name"] == "renamed" and changed.json()["users"] == []
    assert changed.json()["gpu_count"] == 2  # untouched fields keep their value
    assert outsider_client.get(path).json()["entitled"] is False
    assert recorded_tasks.count(("jobs.tasks.scheduler_tick", ())) == 2

    bad = admin_client.patch(
        path, data={"end": (now - timezone.timedelta(days=1)).isoformat()}, format="json"
    )
    assert bad.status_code == 400 and "end: must be after start" in bad.json()["errors"]

    with django_capture_on_commit_callbacks(execute=True):
        assert admin_client.delete(path).status_code == 204
    assert not Reservation.objects.exists()
    assert recorded_tasks.count(("jobs.tasks.scheduler_tick", ())) == 3
    assert admin_client.get(path).status_code == 404


def test_past_reservations_only_on_request(member_client, slave):
    from reservations.services import reservation_create

    now = timezone.now()
    reservation_create(
        name="old",
        cluster=slave.cluster,
        start=now - timezone.timedelta(days=2),
        end=now - timezone.timedelta(days=1),
    )
    assert member_client.get(PORTAL + "reservations").json() == []
    assert len(member_client.get(PORTAL + "reservations?include_past=true").json()) == 1


def test_convert_v1_to_v2(member_client):
    v1 = {
        "jobDefinition": {
            "name": "legacy",
            "clusterId": [3],
            "dockerImage": "debian:stable",
            "command": "",
            "resources": {"gpus": 1, "cpuCores": 2, "systemMemory": 64000},
        }
    }
    response = member_client.post(PORTAL + "convert", data=v1, format="json")
    assert response.status_code == 200, response.content
    request = response.json()["request"]
    assert request["resources"]["cpuMemoryGb"] == 63
    assert request["resources"]["clusterId"] == 3
    assert request["docker"]["command"] == []
    assert response["X-Converted-From"] == "v1"


def test_schema_lists_every_endpoint(anon_client):
    response = anon_client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    paths = response.json()["paths"]
    for needed in (
        "/api/gpulab/v4.0/jobs",
        "/api/gpulab/v4.0/jobs/{job_id}/state/status",
        "/api/gpulab/v4.0/jobs/{job_id}/log",
        "/api/gpulab/v4.0/clusters",
        "/api/portal/reservations",
        "/api/portal/token",
    ):
        assert any(p.rstrip("/") == needed for p in paths), needed


def test_docs_load_nothing_from_the_internet(anon_client):
    response = anon_client.get("/api/docs/")
    assert response.status_code == 200
    html = response.content.decode()
    external = re.findall(r"""(?:src|href)=["'](https?:)?//[^"']+""", html)
    assert not external, external
    assert "cdn" not in html.lower()
    assert "/static/drf_spectacular_sidecar/" in html
    assert '"validatorUrl": null' in html  # no call to validator.swagger.io either
