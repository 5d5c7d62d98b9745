"""The Tapis v3 Jobs-shaped API: every answer checked against Tapis' published schemas
(openapi_facts), the X-Tapis-Token header, the envelope on errors, list types, resubmit."""

from datetime import datetime

import pytest

from jobs.models import Job
from jobs.user_actions.services import job_submit
from tests.conftest import HELLO_WORLD
from tests.tapis.conftest import TAPIS, seed_request, tapis_client
from tests.tapis.openapi_facts import FACTS, check, operation

PORTAL_REQUEST_EXTENSIONS = ("project", "resources", "scheduling")


def _submit(client, request=None):
    answer = client.post(TAPIS + "jobs/submit", request or seed_request(), format="json")
    assert answer.status_code == 200, answer.content
    return answer.json()


def test_routes_are_tapis_operations():
    implemented = {
        ("POST", "/jobs/submit"): "submitJob",
        ("GET", "/jobs/list"): "getJobList",
        ("GET", "/jobs/{jobUuid}"): "getJob",
        ("GET", "/jobs/{jobUuid}/status"): "getJobStatus",
        ("GET", "/jobs/{jobUuid}/history"): "getJobHistory",
        ("POST", "/jobs/{jobUuid}/cancel"): "cancelJob",
        ("POST", "/jobs/{jobUuid}/resubmit"): "resubmitJob",
        ("GET", "/jobs/{jobUuid}/resubmit_request"): "getResubmitRequestJson",
    }
    for (method, path), operation_id in implemented.items():
        assert operation(method, path) == operation_id
    scheme = FACTS["securitySchemes"]["TapisJWT"]
    assert (scheme["in"], scheme["name"]) == ("header", "X-Tapis-Token")


def test_submit_get_status_list_history_shapes(app, tapis_member):
    body = _submit(tapis_member)
    check(body, "RespSubmitJob")
    job = body["result"]
    assert (body["status"], job["status"], job["appId"], job["appVersion"]) == (
        "success",
        "PENDING",
        "classify",
        "0.1",
    )
    assert job["execSystemInputDir"] == "/job/inputs"
    datetime.fromisoformat(job["created"].replace("Z", "+00:00"))
    uuid = job["uuid"]

    got = tapis_member.get(f"{TAPIS}jobs/{uuid}").json()
    check(got, "RespGetJob")
    assert got["result"]["uuid"] == uuid and got["result"]["name"] == "img-classifier-job"

    status = tapis_member.get(f"{TAPIS}jobs/{uuid}/status").json()
    check(status, "RespGetJobStatus")
    assert status["result"] == {"status": "PENDING", "condition": None}

    listed = tapis_member.get(TAPIS + "jobs/list?computeTotal=true").json()
    check(listed, "RespGetJobList")
    assert [item["uuid"] for item in listed["result"]] == [uuid]
    assert listed["metadata"]["totalCount"] == 1

    history = tapis_member.get(f"{TAPIS}jobs/{uuid}/history").json()
    check(history, "RespJobHistory")
    details = [(e["event"], e["eventDetail"]) for e in history["result"]]
    assert details == [("JOB_NEW_STATUS", "PENDING"), ("JOB_NEW_STATUS", "PENDING")]

    request = tapis_member.get(f"{TAPIS}jobs/{uuid}/resubmit_request").json()
    check(request, "RespGetResubmit", result_extra=PORTAL_REQUEST_EXTENSIONS)
    # Kept in today's JobArgSpec shape: the seed's meta.name is the name, meta.required a note.
    assert request["result"]["parameterSet"]["appArgs"][0] == {
        "arg": "--image_file",
        "name": "arg1",
        "include": True,
        "notes": {"required": True},
    }


def test_cancel_and_finished_status(app, tapis_member):
    uuid = _submit(tapis_member)["result"]["uuid"]
    answer = tapis_member.post(f"{TAPIS}jobs/{uuid}/cancel")
    check(answer.json(), "RespCancelJob")
    status = tapis_member.get(f"{TAPIS}jobs/{uuid}/status").json()["result"]
    assert status == {"status": "CANCELLED", "condition": "CANCELLED_BY_USER"}
    again = tapis_member.post(f"{TAPIS}jobs/{uuid}/cancel")
    assert again.status_code == 409
    check(again.json(), "RespBasic")
    assert again.json()["status"] == "error"


def test_errors_are_enveloped_with_field_paths(app, tapis_member):
    answer = tapis_member.post(
        TAPIS + "jobs/submit", {"appId": "classify", "appVersion": "0.1"}, format="json"
    )
    assert answer.status_code == 400
    body = answer.json()
    check(body, "RespBasic")
    assert body["status"] == "error"
    assert "name: is required" in body["message"]
    assert "parameterSet.appArgs: required argument 'model' is missing" in body["result"]["errors"]
    assert not Job.objects.exists()


def test_token_in_x_tapis_token_only(app, member, anon_client_tapis):
    anonymous = anon_client_tapis.get(TAPIS + "jobs/list")
    assert anonymous.status_code == 401
    assert anonymous.json()["status"] == "error"
    assert "X-Tapis-Token" in anonymous["WWW-Authenticate"]
    wrong = anon_client_tapis.get(TAPIS + "jobs/list", HTTP_X_TAPIS_TOKEN="nope")
    assert wrong.status_code == 401
    assert tapis_client(member).get(TAPIS + "jobs/list").status_code == 200
    check(tapis_client(member).get(TAPIS + "jobs/list").json(), "RespGetJobList")


@pytest.fixture
def anon_client_tapis(db):
    from rest_framework.test import APIClient

    return APIClient()


def test_outsiders_get_404_and_see_nothing(app, tapis_member, tapis_outsider):
    uuid = _submit(tapis_member)["result"]["uuid"]
    for path in ("", "/status", "/history"):
        answer = tapis_outsider.get(f"{TAPIS}jobs/{uuid}{path}")
        assert answer.status_code == 404, path
        check(answer.json(), "RespBasic")
    assert tapis_outsider.post(f"{TAPIS}jobs/{uuid}/cancel").status_code == 404
    assert tapis_outsider.get(TAPIS + "jobs/list?listType=ALL_JOBS").json()["result"] == []


def test_list_types_and_paging(app, member, project, make_user, tapis_member, slave):
    from accounts.models import Membership

    mate = make_user("carol")
    Membership.objects.create(user=mate, project=project)
    mine = [_submit(tapis_member)["result"]["uuid"] for _ in range(3)]
    theirs = str(job_submit(user=mate, project=project, document=dict(HELLO_WORLD)).uuid)

    def uuids(query):
        return [j["uuid"] for j in tapis_member.get(TAPIS + "jobs/list" + query).json()["result"]]

    assert uuids("") == mine[::-1]
    assert uuids("?listType=SHARED_JOBS") == [theirs]
    assert set(uuids("?listType=ALL_JOBS")) == {*mine, theirs}
    assert uuids("?limit=1&skip=1&orderBy=created(asc)") == [mine[1]]
    bad = tapis_member.get(TAPIS + "jobs/list?orderBy=color")
    assert bad.status_code == 400 and "orderBy" in bad.json()["message"]


def test_resubmit_over_tapis_and_portal_api(app, member, tapis_member, member_token):
    first = _submit(tapis_member)["result"]
    answer = tapis_member.post(f"{TAPIS}jobs/{first['uuid']}/resubmit")
    check(answer.json(), "RespSubmitJob")
    second = Job.objects.get(uuid=answer.json()["result"]["uuid"])
    assert second.resubmitted_from.uuid.hex == first["uuid"].replace("-", "")
    # Macros are substituted anew: the new job's own uuid, not the original's.
    assert second.request["docker"]["environment"]["RUN_ID"] == str(second.uuid)
    assert (
        second.request["docker"]["command"]
        == Job.objects.get(uuid=first["uuid"]).request["docker"]["command"]
    )

    plain = job_submit(user=member, project=second.project, document=dict(HELLO_WORLD))
    portal = member_token.post(f"/api/portal/jobs/{plain.uuid}/resubmit")
    assert portal.status_code == 201
    third = Job.objects.get(uuid=portal.content.decode())
    assert (third.resubmitted_from, third.request, third.app_id) == (plain, plain.request, "")


@pytest.fixture
def member_token(member_key):
    from rest_framework.test import APIClient

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {member_key}")
    return client


def test_apps_endpoints(member, cluster, tapis_member, app_definition, tapis_outsider):
    created = tapis_member.post(TAPIS + "apps", app_definition, format="json")
    assert created.status_code == 201, created.content
    check(created.json(), "RespBasic")
    assert created.json()["result"]["jobAttributes"]["parameterSet"]["appArgs"][0]["name"] == (
        "verbose"
    )
    listed = tapis_member.get(TAPIS + "apps").json()["result"]
    assert [(a["id"], a["version"]) for a in listed] == [("classify", "0.1")]
    assert tapis_member.get(TAPIS + "apps/classify/0.1").json()["result"]["owner"] == "alice"
    assert tapis_outsider.get(TAPIS + "apps/classify/0.1").status_code == 404
    bad = tapis_member.post(TAPIS + "apps", {"id": "x y"}, format="json")
    assert bad.status_code == 400
    assert {"id: must match [A-Za-z0-9][A-Za-z0-9._-]{0,79}", "containerImage: is required"} <= set(
        bad.json()["result"]["errors"]
    )
    duplicate = tapis_member.post(TAPIS + "apps", app_definition, format="json")
    assert duplicate.status_code == 409
