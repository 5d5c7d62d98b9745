"""Text no database can store (NUL bytes, unpaired surrogates) gets a 400 naming where it was,
in every input path of the API: job documents (a property test over every text field), other
JSON bodies, query parameters, form fields, URL paths and headers. Nothing is written.

Runs on SQLite here; tests/jobs/test_unstorable_text_postgres.py replays the cases that were
500s on PostgreSQL.
"""

import copy
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.text_guard import NUL_MESSAGE, SURROGATE_MESSAGE
from jobs.models import Job, JobEvent
from reservations.models import Reservation
from tests.api.conftest import API, PORTAL
from tests.conftest import HELLO_WORLD
from tests.jobs.spec.docs import with_changes
from tests.jobs.spec.test_unstorable_text import (
    AROUND,
    BAD_CHARS,
    TEXT_FIELD_LABELS,
    TEXT_FIELDS,
    message_for,
)

pytestmark = pytest.mark.django_db


def counts():
    return (Job.objects.count(), JobEvent.objects.count(), Reservation.objects.count())


def post_json(client, path, document, content_type="application/json"):
    # json.dumps writes a lone surrogate as the escape "\ud800", as any JSON client would.
    return client.post(path, data=json.dumps(document), content_type=content_type)


@settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    label=st.sampled_from(TEXT_FIELD_LABELS),
    bad=BAD_CHARS,
    before=AROUND,
    after=AROUND,
    content_type=st.sampled_from(["application/json", "text/plain"]),
)
def test_every_text_field_of_a_submitted_job_is_a_400(
    member_client, slave, label, bad, before, after, content_type
):
    path, changes = dict(TEXT_FIELDS)[label](before + bad + after)
    document = with_changes(HELLO_WORLD, changes)
    written = counts()
    response = post_json(member_client, API + "jobs", document, content_type)
    assert response.status_code == 400, response.content
    expected = f"{path}: {message_for(bad, key='key' in label)}"
    assert expected in response.json()["errors"], response.json()
    assert counts() == written


def test_the_job_endpoints_still_accept_good_text(member_client, slave):
    """Control for the property test: the same document without the bad character is stored."""
    document = copy.deepcopy(HELLO_WORLD)
    document["description"] = "tab\t and emoji \U0001f600"
    response = post_json(member_client, API + "jobs", document)
    assert response.status_code == 201, response.content
    assert Job.objects.get().description == "tab\t and emoji \U0001f600"


@pytest.mark.parametrize("bad", ["\x00", "\ud800"])
def test_convert_endpoint(member_client, bad):
    response = post_json(member_client, PORTAL + "convert", {**HELLO_WORLD, "name": bad})
    assert response.status_code == 400
    assert response.json()["errors"] == [f"name: {message_for(bad, key=False)}"]


@pytest.mark.parametrize("field", ["name", "description", "slaves", "projects", "users"])
@pytest.mark.parametrize("bad", ["\x00", "\udc80"])
def test_reservation_bodies(admin_client, slave, field, bad):
    payload = {
        "name": "r",
        "cluster_id": 1,
        "start": "2030-01-01T00:00:00Z",
        "end": "2030-01-02T00:00:00Z",
    }
    payload[field] = [f"x{bad}"] if field in ("slaves", "projects", "users") else f"x{bad}"
    path = f"{field}[0]" if isinstance(payload[field], list) else field
    written = counts()
    response = post_json(admin_client, PORTAL + "reservations", payload)
    assert response.status_code == 400, response.content
    assert response.json() == {
        "error": "invalid request",
        "errors": [f"{path}: {message_for(bad, key=False)}"],
    }
    assert counts() == written


@pytest.mark.parametrize(
    "url,param",
    [
        (API + "jobs?user_name=%00", "user_name"),
        (API + "jobs?user_name=alice&project_name=vi%00sion", "project_name"),
        (API + "jobs?assigned_slave_name=%00", "assigned_slave_name"),
        (API + "jobs?allowed_states=QUEUED%00", "allowed_states"),
        (API + "jobs?sort=%00", "sort"),
        (API + "jobs?us%00er=x", "us\\u0000er"),  # the parameter's name itself
        (API + "clusters?x=%00", "x"),
        (PORTAL + "reservations?include_past=%00", "include_past"),
        (PORTAL + "projects?x=%00", "x"),
    ],
)
def test_query_parameters(member_client, url, param):
    response = member_client.get(url)
    assert response.status_code == 400, response.content
    assert response.json() == {
        "error": f"invalid query parameter {param}",
        "errors": [f"{param}: {NUL_MESSAGE}"],
    }


def test_query_parameters_of_writes(member_client, slave):
    written = counts()
    response = member_client.post(
        API + "jobs?hold=%00", data=json.dumps(HELLO_WORLD), content_type="application/json"
    )
    assert response.status_code == 400
    assert response.json()["errors"] == [f"hold: {NUL_MESSAGE}"]
    assert counts() == written


def test_a_nul_in_the_url_path(member_client, admin_client):
    for client, url in (
        (member_client, API + "jobs/%00"),
        (member_client, API + "jobs/%00/log"),
        (admin_client, PORTAL + "reservations/x%00y"),
    ):
        response = client.get(url)
        assert response.status_code == 400, url
        assert response.json() == {"error": "invalid request", "errors": [f"(path): {NUL_MESSAGE}"]}


def test_a_nul_in_the_token_header(member):
    from rest_framework.test import APIClient

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token abc\x00def")
    response = client.get(API + "jobs")
    assert response.status_code == 400
    assert response.json()["errors"] == [f"header Authorization: {NUL_MESSAGE}"]


def test_form_fields_posted_to_the_api(member_client, slave):
    written = counts()
    for data, content_type in (
        ("name=a%00b", "application/x-www-form-urlencoded"),
        (None, None),  # multipart, below
    ):
        if data is None:
            response = member_client.post(API + "jobs", data={"name": "a\x00b"}, format="multipart")
        else:
            response = member_client.post(API + "jobs", data=data, content_type=content_type)
        assert response.status_code == 400
        assert response.json()["errors"] == [f"name: {NUL_MESSAGE}"]
    assert counts() == written


def test_every_problem_of_a_request_is_listed(member_client, slave):
    document = with_changes(HELLO_WORLD, {"name": "\x00", "request.docker.command": "\ud800"})
    response = member_client.post(
        API + "jobs?hold=%00", data=json.dumps(document), content_type="application/json"
    )
    assert response.status_code == 400
    assert response.json() == {
        "error": "invalid request",
        "errors": [
            f"hold: {NUL_MESSAGE}",
            f"name: {NUL_MESSAGE}",
            f"request.docker.command: {SURROGATE_MESSAGE}",
        ],
    }


def test_other_body_problems_keep_their_own_answers(member_client, slave, settings):
    """The guard leaves invalid UTF-8, syntax errors, deep nesting and size to the views."""
    written = counts()
    cases = [
        (b'{"name": "\\u0000 \xff"}', "not valid UTF-8"),
        (b'{"name": "\\u0000",}', "invalid JSON at line 1"),
        (b"[" * 50_000 + b'"\\u0000"' + b"]" * 50_000, "nested too deeply"),
    ]
    for body, fragment in cases:
        response = member_client.post(API + "jobs", data=body, content_type="application/json")
        assert response.status_code == 400, body[:40]
        assert fragment in " ".join(response.json()["errors"]), response.json()
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 100
    body = json.dumps({**HELLO_WORLD, "name": "\x00"})
    response = member_client.post(API + "jobs", data=body, content_type="application/json")
    assert response.status_code == 413
    assert counts() == written
