"""Read-only job shares: the owner shares with a user or a project; the grantee reads the job in
full on every read path (GPULab API list/get/log/debug, portal API, web pages, outputs
downloads) and acts on nothing; shares are listed, revocable, recorded in the history, and a
revoke takes every read path back at once."""

import json

import pytest
from django.test import Client

from accounts.models import Membership, Project
from core.errors import NotAllowed, ServiceError
from jobs.execution.outputs import job_archive_outputs_dir
from jobs.models import JobShare
from jobs.user_actions.shares import job_share_create, job_share_revoke, share_refusal
from tests.api.conftest import API, PORTAL, _client

pytestmark = pytest.mark.django_db


@pytest.fixture
def job(submit):
    job = submit()  # alice's job in project vision, named HelloWorld
    root = job_archive_outputs_dir(job)
    root.mkdir(parents=True)
    (root / "result.txt").write_bytes(b"42\n")
    return job


@pytest.fixture
def bob_api(outsider, responses):
    return _client(responses, outsider)


@pytest.fixture
def bob_web(outsider):
    client = Client()
    client.force_login(outsider)
    return client


def read_paths(job):
    """(name, kind, url): every read path of a job; kind says how a full read shows."""
    uuid = job.uuid
    return [
        ("gpulab list", "api-name", API + "jobs"),
        ("gpulab get", "api-name", API + f"jobs/{uuid}"),
        ("gpulab log", "api-status", API + f"jobs/{uuid}/log"),
        ("gpulab debug", "api-status", API + f"jobs/{uuid}/debug"),
        ("portal outputs", "api-status", PORTAL + f"jobs/{uuid}/outputs/"),
        ("portal download", "api-status", PORTAL + f"jobs/{uuid}/outputs/download?path=result.txt"),
        ("web detail", "web-name", f"/jobs/{uuid}/"),
        ("web list", "web-name", "/jobs/"),
        ("web log", "web-status", f"/jobs/{uuid}/log/"),
        ("web raw log", "web-status", f"/jobs/{uuid}/log.txt"),
        ("web download", "web-status", f"/jobs/{uuid}/outputs/download?path=result.txt"),
    ]


def reads(job, api, web) -> dict:
    """Which read paths give ``api``/``web``'s user the full job: name -> True/False."""
    seen = {}
    for name, kind, url in read_paths(job):
        response = (api if kind.startswith("api") else web).get(url)
        if kind.endswith("status"):
            assert response.status_code in (200, 403, 404), (name, response.status_code)
            seen[name] = response.status_code == 200
        else:
            assert response.status_code == 200, name
            seen[name] = "HelloWorld" in response.content.decode()
    return seen


def test_a_user_share_opens_every_read_path_and_a_revoke_closes_it(
    job, member, outsider, bob_api, bob_web
):
    before = reads(job, bob_api, bob_web)
    assert not any(before.values()), before
    share = job_share_create(job=job, user=member, grantee_user=outsider)
    shared = reads(job, bob_api, bob_web)
    assert all(shared.values()), shared
    assert (
        b"".join(bob_web.get(f"/jobs/{job.uuid}/outputs/download?path=result.txt")).strip() == b"42"
    )
    job_share_revoke(share=share, user=member)
    after = reads(job, bob_api, bob_web)
    assert not any(after.values()), after


def test_a_project_share_reaches_every_member_of_that_project(
    job, member, outsider, other_project, make_user, responses
):
    carol = make_user("carol")
    Membership.objects.create(user=carol, project=other_project)
    job_share_create(job=job, user=member, grantee_project=other_project)
    for user in (outsider, carol):
        api = _client(responses, user)
        got = api.get(API + f"jobs/{job.uuid}").json()
        assert got["name"] == "HelloWorld" and got["owner"]["userUrn"].endswith("+alice")
        assert api.get(API + f"jobs/{job.uuid}/log").status_code == 200
    stranger = make_user("dave")
    assert _client(responses, stranger).get(API + f"jobs/{job.uuid}/log").status_code == 403


def test_the_grantee_cannot_act_on_the_job(job, member, outsider, bob_api, bob_web):
    job_share_create(job=job, user=member, grantee_user=outsider)
    for text in ("CANCELLED", "ONHOLD"):
        answer = bob_api.put(
            API + f"jobs/{job.uuid}/state/status", data=text, content_type="text/plain"
        )
        assert answer.status_code == 403
    assert bob_api.delete(API + f"jobs/{job.uuid}").status_code == 403
    assert bob_web.post(f"/jobs/{job.uuid}/cancel/", {"confirmed": "1"}).status_code in (302, 403)
    job.refresh_from_db()
    assert job.status == "QUEUED"
    page = bob_web.get(f"/jobs/{job.uuid}/").content.decode()
    assert 'id="action-cancel"' not in page
    # Nor re-share it, nor see who else it is shared with.
    with pytest.raises(NotAllowed):
        job_share_create(job=job, user=outsider, grantee_project=Project.objects.get(name="speech"))
    assert bob_api.get(PORTAL + f"jobs/{job.uuid}/shares/").status_code == 403


def test_shares_over_rest_list_create_revoke_with_history(
    job, member, outsider, member_client, bob_api
):
    url = PORTAL + f"jobs/{job.uuid}/shares/"
    created = member_client.post(
        url, data=json.dumps({"user": "bob"}), content_type="application/json"
    )
    assert created.status_code == 201, created.content
    body = created.json()
    assert (body["user"], body["project"], body["createdBy"]) == ("bob", None, "alice")
    project = member_client.post(
        url, data=json.dumps({"project": "speech"}), content_type="application/json"
    )
    assert project.status_code == 201
    listed = member_client.get(url).json()["items"]
    assert [(s["user"], s["project"]) for s in listed] == [("bob", None), (None, "speech")]
    again = member_client.post(
        url, data=json.dumps({"user": "bob"}), content_type="application/json"
    )
    assert again.status_code == 409
    assert bob_api.delete(url + f"{body['id']}/").status_code == 403
    assert member_client.delete(url + f"{body['id']}/").status_code == 204
    assert [s["user"] for s in member_client.get(url).json()["items"]] == [None]
    history = list(job.events.values_list("message", flat=True))
    assert "shared read-only with user bob by alice" in history
    assert "shared read-only with project speech by alice" in history
    assert "share with user bob revoked by alice" in history
    debug = member_client.get(API + f"jobs/{job.uuid}/debug").json()
    assert any("shared read-only with user bob" in (e["msg"] or "") for e in debug)


@pytest.mark.parametrize(
    "payload, expected",
    [
        ({}, ["(body): name exactly one of user, project"]),
        ({"user": "bob", "project": "speech"}, ["(body): name exactly one of user, project"]),
        ({"user": 5}, ["user: must be a name (a string)"]),
        ({"user": "bob", "colour": "red"}, ["colour: unknown field"]),
    ],
)
def test_bad_share_requests_name_the_field(job, member_client, payload, expected):
    url = PORTAL + f"jobs/{job.uuid}/shares/"
    answer = member_client.post(url, data=json.dumps(payload), content_type="application/json")
    assert answer.status_code == 400 and answer.json()["errors"] == expected
    assert JobShare.objects.count() == 0


def test_unknown_grantees_and_self_shares_are_refused(job, member, member_client):
    url = PORTAL + f"jobs/{job.uuid}/shares/"
    answer = member_client.post(
        url, data=json.dumps({"user": "nobody"}), content_type="application/json"
    )
    assert answer.status_code == 400 and "no user 'nobody'" in answer.json()["error"]
    with pytest.raises(ServiceError, match="owner sees it already"):
        job_share_create(job=job, user=member, grantee_user=member)
    assert JobShare.objects.count() == 0


def test_the_share_rule_is_reusable_for_any_owned_thing(member, outsider, project):
    assert share_refusal(owner=member, user=member, grantee_user=outsider) is None
    assert share_refusal(owner=member, user=outsider, grantee_project=project) == (
        "only the owner shares it"
    )
    assert "exactly one" in share_refusal(owner=member, user=member)


def test_a_shared_job_matches_name_filters_for_the_grantee(job, member, outsider, bob_api):
    url = API + "jobs?project_name=vision"
    assert bob_api.get(url).json()["items"] == []
    job_share_create(job=job, user=member, grantee_user=outsider)
    items = bob_api.get(url).json()["items"]
    assert [item["uuid"] for item in items] == [str(job.uuid)]


def test_the_job_page_has_the_share_form_for_the_owner_only(job, member, outsider, client):
    client.force_login(member)
    page = client.get(f"/jobs/{job.uuid}/").content.decode()
    assert 'id="share-form"' in page
    added = client.post(f"/jobs/{job.uuid}/shares/", {"kind": "user", "name": "bob"})
    assert added.status_code == 302
    share = JobShare.objects.get(job=job)
    assert share.grantee_user == outsider
    page = client.get(f"/jobs/{job.uuid}/").content.decode()
    assert "user bob" in page and f"/jobs/{job.uuid}/shares/{share.pk}/revoke/" in page
    bob = Client()
    bob.force_login(outsider)
    assert 'id="share-form"' not in bob.get(f"/jobs/{job.uuid}/").content.decode()
    assert bob.post(f"/jobs/{job.uuid}/shares/{share.pk}/revoke/").status_code == 302
    assert JobShare.objects.filter(pk=share.pk).exists()  # refused: bob is not the owner
    client.post(f"/jobs/{job.uuid}/shares/{share.pk}/revoke/")
    assert not JobShare.objects.exists()


def test_an_admin_revokes_in_the_admin_through_the_service(job, member, outsider, admin_user):
    share = job_share_create(job=job, user=member, grantee_user=outsider)
    client = Client()
    client.force_login(admin_user)
    url = f"/admin/jobs/jobshare/{share.pk}/delete/"
    assert client.post(url, {"post": "yes"}).status_code == 302
    assert not JobShare.objects.exists()
    assert job.events.filter(message="share with user bob revoked by root").exists()
