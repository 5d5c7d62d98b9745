"""Pages refuse text no database can store with a plain 400 naming the parameter; a job
document typed into the editor is refused by the spec at the path of the bad string."""

import json

import pytest

from core.text_guard import NUL_MESSAGE, SURROGATE_MESSAGE
from jobs.models import Job
from reservations.models import Reservation

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "url,param",
    [
        ("/jobs/?q=%00", "q"),
        ("/jobs/?user=al%00ice", "user"),
        ("/jobs/?project=%00", "project"),
        ("/live/slaves/?q=%00", "q"),
        ("/live/clusters/?cluster=%00", "cluster"),
        ("/reservations/?x=%00", "x"),
        ("/jobs/new/?clone=%00", "clone"),
    ],
)
def test_query_parameters(member_client, url, param):
    response = member_client.get(url)
    assert response.status_code == 400
    assert response["Content-Type"].startswith("text/plain")
    text = response.content.decode()
    assert f"invalid query parameter {param}" in text
    assert f"{param}: {NUL_MESSAGE}" in text


def test_admin_search(admin_client_):
    response = admin_client_.get("/admin/jobs/job/?q=%00")
    assert response.status_code == 400
    assert f"q: {NUL_MESSAGE}" in response.content.decode()


def test_login_form():
    from django.test import Client

    response = Client().post("/accounts/login/", {"username": "a\x00", "password": "x"})
    assert response.status_code == 400
    assert f"username: {NUL_MESSAGE}" in response.content.decode()


def test_reservation_form_writes_nothing(admin_client_, slave):
    response = admin_client_.post(
        "/reservations/new/",
        {
            "name": "r\x00",
            "cluster": slave.cluster_id,
            "gpu_count": 1,
            "start": "2030-01-01 00:00",
            "end": "2030-01-02 00:00",
        },
    )
    assert response.status_code == 400
    assert f"name: {NUL_MESSAGE}" in response.content.decode()
    assert not Reservation.objects.exists()


def test_job_fields_form(member_client, project, slave):
    response = member_client.post(
        "/jobs/new/", {"project": project.pk, "name": "x\x00", "document": ""}
    )
    assert response.status_code == 400
    assert f"name: {NUL_MESSAGE}" in response.content.decode()
    assert not Job.objects.exists()


@pytest.mark.parametrize(
    "bad,message", [("\x00", NUL_MESSAGE), ("\ud800", SURROGATE_MESSAGE)], ids=["nul", "surrogate"]
)
@pytest.mark.parametrize("apply_fields", [False, True])
def test_job_document_in_the_editor(
    member_client, project, slave, hello_world, bad, message, apply_fields
):
    """The editor's text holds the JSON escape ("\\u0000"), not the character: the form field is
    fine, the document is not; the spec names the path, on submit and on "apply fields"."""
    hello_world["request"]["docker"]["environment"] = {"FOO": f"a{bad}b"}
    data = {"project": project.pk, "document": json.dumps(hello_world)}
    if apply_fields:
        data["apply_fields"] = "1"
    response = member_client.post("/jobs/new/", data)
    assert response.status_code == 400
    html = response.content.decode()
    assert "<code>request.docker.environment.FOO</code>" in html
    assert message in html
    assert not Job.objects.exists()


def test_job_document_in_the_convert_call(member_client, hello_world):
    hello_world["name"] = "\ud800"
    response = member_client.post("/jobs/new/convert", {"document": json.dumps(hello_world)})
    assert response.status_code == 200  # the editor's live check answers in its body
    answer = response.json()
    assert answer["ok"] is False
    assert [(e["path"], e["message"]) for e in answer["errors"]] == [("name", SURROGATE_MESSAGE)]
