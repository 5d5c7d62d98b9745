"""Bad input always gets a 4xx with a useful message, never a 500, and never a partial write."""

import copy
import json

import pytest

from jobs.models import Job, JobEvent
from reservations.models import Reservation
from tests.api.conftest import API, PORTAL
from tests.conftest import HELLO_WORLD

pytestmark = pytest.mark.django_db


@pytest.fixture
def nothing_written(db):
    """Asserts after the test that no Job, JobEvent or Reservation row was added."""
    before = (Job.objects.count(), JobEvent.objects.count(), Reservation.objects.count())
    yield
    after = (Job.objects.count(), JobEvent.objects.count(), Reservation.objects.count())
    assert after == before


def _post_job(client, text, query=""):
    return client.post(API + "jobs" + query, data=text, content_type="application/json")


def test_malformed_json_gives_line_and_column(member_client, slave, nothing_written):
    text = '{\n  "name": "x",\n  "request": {,}\n}'
    response = _post_job(member_client, text)
    assert response.status_code == 400
    body = response.json()
    assert body["error"] == "invalid JSON"
    assert "line 3 column" in body["errors"][0]


@pytest.mark.parametrize(
    "text,fragment",
    [
        ("", "empty"),
        ("[1, 2]", "(document): must be a JSON object"),
        ('"just a string"', "(document)"),
        ("\xff\xfe", "UTF-8"),
        ("{}", 'must contain "request"'),
        ('{"name": "x", "request": {}, "jobDefinition": {}}', "not both"),
        ("NaN", "invalid JSON"),
    ],
)
def test_bad_documents(member_client, slave, nothing_written, text, fragment):
    data = text.encode("latin-1") if text == "\xff\xfe" else text
    response = _post_job(member_client, data)
    assert response.status_code == 400
    answer = response.json()
    assert fragment in answer["error"] + " ".join(answer.get("errors", []))


@pytest.mark.parametrize(
    "mutate,expected",
    [
        (
            lambda d: d["request"]["resources"].update(gpus=-1),
            "request.resources.gpus: must be >= 0",
        ),
        (lambda d: d["request"]["resources"].update(cpus="many"), "request.resources.cpus"),
        (
            lambda d: d["request"]["resources"].update(cpuMemoryGb=1.5),
            "request.resources.cpuMemoryGb",
        ),
        (lambda d: d["request"]["docker"].update(image="Bad Image!"), "request.docker.image"),
        (lambda d: d["request"].update(colour="blue"), "request.colour"),
        (lambda d: d.update(nmae="typo"), "nmae"),
        (
            lambda d: d["request"]["docker"].update(environment={"1BAD": "x"}),
            "request.docker.environment",
        ),
        (
            lambda d: d["request"]["scheduling"].update(maxDuration="1 month"),
            "request.scheduling.maxDuration",
        ),
        (lambda d: d["request"]["scheduling"].update(reservationIds=["nope"]), "reservationIds"),
        (lambda d: d.update(name=""), "name"),
        (
            lambda d: d["request"]["docker"].update(command="sh -c 'echo hi"),
            "request.docker.command: cannot be split into words: No closing quotation",
        ),
    ],
)
def test_invalid_fields_name_the_path(member_client, slave, nothing_written, mutate, expected):
    document = copy.deepcopy(HELLO_WORLD)
    mutate(document)
    response = _post_job(member_client, json.dumps(document))
    assert response.status_code == 400, response.content
    assert response.json()["error"] == "invalid job"
    assert any(expected in e for e in response.json()["errors"]), response.json()


def test_every_problem_is_listed(member_client, slave, nothing_written):
    document = copy.deepcopy(HELLO_WORLD)
    document["request"]["resources"].update(gpus=-1, cpus=0)
    errors = _post_job(member_client, json.dumps(document)).json()["errors"]
    assert len(errors) >= 2


@pytest.mark.parametrize(
    "owner,expected",
    [
        ("vision", "owner: must be an object"),
        ({"projectUrn": 5}, "owner.projectUrn: must be a project URN or name"),
        ({"projectUrn": "urn:publicid:IDN+gpuportal.local+project+nope"}, "no project 'nope'"),
    ],
)
def test_bad_owner(member_client, slave, nothing_written, owner, expected):
    document = {**HELLO_WORLD, "owner": owner}
    response = _post_job(member_client, json.dumps(document))
    assert response.status_code == 400
    assert any(expected in e for e in response.json()["errors"])


def test_owner_required_with_several_projects(member_client, member, other_project, slave):
    from accounts.models import Membership

    Membership.objects.create(user=member, project=other_project)
    response = _post_job(member_client, json.dumps(HELLO_WORLD))
    assert response.status_code == 400
    assert response.json()["errors"] == [
        "owner.projectUrn: is required (you are a member of several projects)"
    ]
    assert Job.objects.count() == 0


def test_huge_body_is_413(member_client, slave, settings, nothing_written):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 10_000
    document = copy.deepcopy(HELLO_WORLD)
    document["description"] = "x" * 20_000
    for path in (API + "jobs", PORTAL + "convert", PORTAL + "reservations"):
        response = member_client.post(
            path, data=json.dumps(document), content_type="application/json"
        )
        assert response.status_code == 413, path
        assert "too large" in response.json()["error"]
    huge = "CANCELLED" + " " * 20_000
    job_path = API + "jobs/00000000-0000-0000-0000-000000000001/state/status"
    assert member_client.put(job_path, data=huge, content_type="text/plain").status_code == 413


def test_huge_form_body_with_session_is_413(member, slave, settings, nothing_written):
    """A session request's CSRF check reads form bodies: that must be a 413 too, not a 400."""
    from rest_framework.test import APIClient

    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    client = APIClient()
    client.force_login(member)
    response = client.post(
        API + "jobs", data="a=" + "x" * 5000, content_type="application/x-www-form-urlencoded"
    )
    assert response.status_code == 413


@pytest.mark.parametrize(
    "path",
    [
        "jobs/not-a-uuid",
        "jobs/123",
        "jobs/00000000-0000-0000-0000-000000000000",
        "jobs/not-a-uuid/log",
        "jobs/not-a-uuid/debug",
        "jobs/%20/debug",
    ],
)
def test_bad_or_unknown_uuids_are_404(member_client, path):
    response = member_client.get(API + path)
    assert response.status_code == 404
    assert response.json() == {"error": "not found"} or "no such job" in response.json()["error"]


def test_bad_uuid_on_writes_is_404(member_client, admin_client, nothing_written):
    assert (
        member_client.put(
            API + "jobs/x/state/status", data="CANCELLED", content_type="text/plain"
        ).status_code
        == 404
    )
    assert member_client.delete(API + "jobs/x").status_code == 404
    assert admin_client.delete(PORTAL + "reservations/x").status_code == 404
    assert member_client.get(PORTAL + "jobs/x/explain").status_code == 404


@pytest.mark.parametrize(
    "query,param",
    [
        ("pending=maybe", "pending"),
        ("running=2", "running"),
        ("allowed_states=QUEUED,SLEEPING", "allowed_states"),
        ("allowed_states=", "allowed_states"),
        ("cluster_id=one", "cluster_id"),
        ("cluster_id=-1", "cluster_id"),
        ("cluster_id=99999999999", "cluster_id"),
        ("user_urn=alice", "user_urn"),
        ("project_urn=urn:publicid:IDN+x+user+alice", "project_urn"),
        ("interactive=perhaps", "interactive"),
        ("reservation_id=abc", "reservation_id"),
        ("sort=colour", "sort"),
        ("sort=-owner__password", "sort"),
        ("page=0", "page"),
        ("page=-3", "page"),
        ("page=two", "page"),
        ("page_size=0", "page_size"),
        ("page_size=201", "page_size"),
        ("page_size=1e3", "page_size"),
        ("hold=dunno", "hold"),
    ],
)
def test_bad_filters_name_the_parameter(member_client, query, param):
    method = member_client.post if param == "hold" else member_client.get
    kwargs = (
        {"data": json.dumps(HELLO_WORLD), "content_type": "application/json"}
        if param == "hold"
        else {}
    )
    response = method(API + "jobs?" + query, **kwargs)
    assert response.status_code == 400, response.content
    assert param in response.json()["error"]
    assert response.json()["errors"][0].startswith(param + ":")


def test_bad_status_bodies(member_client, submit):
    job = submit()
    events = JobEvent.objects.count()
    path = f"{API}jobs/{job.uuid}/state/status"
    for text in ("", "RUNNING", "FINISHED", "cancel", "DELETED", "{}", "\x00"):
        response = member_client.put(path, data=text, content_type="text/plain")
        assert response.status_code == 400, text
        assert "must be one of CANCELLED, MUSTHALT, ONHOLD, QUEUED" in response.json()["errors"][0]
    assert JobEvent.objects.count() == events
    job.refresh_from_db()
    assert job.status == "QUEUED"


def test_status_body_tolerates_quotes_case_and_newline(member_client, submit):
    job = submit()
    path = f"{API}jobs/{job.uuid}/state/status"
    assert member_client.put(path, data='"onhold"\n', content_type="text/plain").status_code == 200
    job.refresh_from_db()
    assert job.status == "ONHOLD"


def test_refused_transitions_are_409_with_reason(member_client, submit):
    job = submit()
    path = f"{API}jobs/{job.uuid}/state/status"
    response = member_client.put(path, data="QUEUED", content_type="text/plain")  # not ONHOLD
    assert response.status_code == 409
    assert "ONHOLD" in response.json()["error"]
    response = member_client.put(path, data="MUSTHALT", content_type="text/plain")
    assert response.status_code == 409
    assert "RUNNING" in response.json()["error"]
    member_client.put(path, data="CANCELLED", content_type="text/plain")
    again = member_client.put(path, data="CANCELLED", content_type="text/plain")
    assert again.status_code == 409


def test_delete_of_a_job_on_a_slave_is_409(member_client, submit, slave):
    job = submit()
    Job.objects.filter(pk=job.pk).update(status="ASSIGNED", slave=slave, gpu_ids=[0])
    for query in ("", "?finished=true"):
        response = member_client.delete(f"{API}jobs/{job.uuid}{query}")
        assert response.status_code == 409
        assert "cancel it first" in response.json()["error"]
    job.refresh_from_db()
    assert job.status == "ASSIGNED"


@pytest.mark.parametrize(
    "payload,expected",
    [
        ({"name": "x"}, "cluster_id: This field is required."),
        (
            {"name": "x", "cluster_id": 1, "start": "tomorrow", "end": "2030-01-01T00:00:00Z"},
            "start:",
        ),
        (
            {
                "name": "x",
                "cluster_id": 1,
                "start": "2030-01-02T00:00:00Z",
                "end": "2030-01-01T00:00:00Z",
            },
            "end: must be after start",
        ),
        (
            {
                "name": "x",
                "cluster_id": 7,
                "start": "2030-01-01T00:00:00Z",
                "end": "2030-01-02T00:00:00Z",
            },
            "cluster_id: no cluster 7",
        ),
        (
            {
                "name": "x",
                "cluster_id": 1,
                "start": "2030-01-01T00:00:00Z",
                "end": "2030-01-02T00:00:00Z",
                "slaves": ["nope"],
                "projects": ["ghost"],
                "users": ["nobody"],
            },
            "slaves[0]: no slave 'nope'",
        ),
        ({"name": "x", "colour": "red"}, "colour: unknown field"),
        ({"name": "x", "cluster_id": "one"}, "cluster_id: A valid integer is required."),
        ({"name": "x", "cluster_id": 1, "gpu_count": 0}, "gpu_count:"),
    ],
)
def test_bad_reservations(admin_client, slave, nothing_written, payload, expected):
    response = admin_client.post(PORTAL + "reservations", data=payload, format="json")
    assert response.status_code == 400, response.content
    assert any(expected in e for e in response.json()["errors"]), response.json()


def test_bad_reservation_json(admin_client, nothing_written):
    response = admin_client.post(
        PORTAL + "reservations", data="{oops", content_type="application/json"
    )
    assert response.status_code == 400
    assert "line 1 column 2" in response.json()["errors"][0]


def test_convert_errors(member_client):
    response = member_client.post(
        PORTAL + "convert",
        data='{"jobDefinition": {"cpuCores": 1, "bogus": 2}}',
        content_type="application/json",
    )
    assert response.status_code == 400
    assert any("jobDefinition.bogus" in e for e in response.json()["errors"]), response.json()
