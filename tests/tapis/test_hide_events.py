"""hideJob, unhideJob and sendEvent (issue 27, Tapis item 8): who may, when, what the lists
and the history show afterwards. tapipy drives them in test_tapipy.py."""

import pytest

from accounts.models import Membership
from jobs.models import Job, JobEvent
from tapis.job_actions import USER_EVENTS_PER_JOB_MAX
from tapis.models import HiddenJob, JobUserEvent
from tapis.submit import tapis_job_submit
from tests.tapis.conftest import TAPIS, seed_request, tapis_client
from tests.tapis.openapi_facts import check


@pytest.fixture
def job(app, member):
    return tapis_job_submit(user=member, request=seed_request())


def _listed(client) -> list[str]:
    return [j["uuid"] for j in client.get(TAPIS + "jobs/list").json()["result"]]


def test_hide_and_unhide_an_ended_job(job, tapis_member, member, make_user, project):
    uuid = str(job.uuid)
    running = tapis_member.post(f"{TAPIS}jobs/{uuid}/hide")
    assert running.status_code == 409 and "only an ended job" in running.json()["message"]

    Job.objects.filter(pk=job.pk).update(status="FINISHED")
    mate = make_user("carol")
    Membership.objects.create(user=mate, project=project)
    assert tapis_client(mate).post(f"{TAPIS}jobs/{uuid}/hide").status_code == 403

    hidden = tapis_member.post(f"{TAPIS}jobs/{uuid}/hide")
    assert hidden.status_code == 200, hidden.content
    check(hidden.json(), "RespHideJob")
    assert hidden.json()["result"]["message"] == f"job {uuid} hidden"
    assert uuid not in _listed(tapis_member)
    assert tapis_member.get(f"{TAPIS}jobs/{uuid}").json()["result"]["visible"] is False
    again = tapis_member.post(f"{TAPIS}jobs/{uuid}/hide")
    assert again.json()["result"]["message"] == f"job {uuid} was hidden already"
    assert HiddenJob.objects.filter(job=job).count() == 1

    shown = tapis_member.post(f"{TAPIS}jobs/{uuid}/unhide")
    assert shown.status_code == 200 and shown.json()["result"]["message"].endswith("shown again")
    assert uuid in _listed(tapis_member)
    assert tapis_member.get(f"{TAPIS}jobs/{uuid}").json()["result"]["visible"] is True


def test_send_event_lands_in_the_history(job, tapis_member, tapis_outsider):
    uuid = str(job.uuid)
    sent = tapis_member.post(
        f"{TAPIS}jobs/{uuid}/sendEvent",
        {"eventData": "epoch 3 of 10", "eventDetail": "PROGRESS"},
        format="json",
    )
    assert sent.status_code == 200, sent.content
    check(sent.json(), "RespBasic")
    default = tapis_member.post(
        f"{TAPIS}jobs/{uuid}/sendEvent", {"eventData": "hello"}, format="json"
    )
    assert default.status_code == 200
    history = tapis_member.get(f"{TAPIS}jobs/{uuid}/history").json()
    check(history, "RespJobHistory")
    user_events = [h for h in history["result"] if h["event"] == "JOB_USER_EVENT"]
    assert [(h["eventDetail"], h["description"]) for h in user_events] == [
        ("PROGRESS", "epoch 3 of 10"),
        ("DEFAULT", "hello"),
    ]
    # The portal's own history shows it too.
    assert JobEvent.objects.filter(job=job, message__contains="epoch 3 of 10").exists()

    # An outsider does not see the job at all.
    outside = tapis_outsider.post(
        f"{TAPIS}jobs/{uuid}/sendEvent", {"eventData": "x"}, format="json"
    )
    assert outside.status_code == 404


def test_send_event_refusals(job, tapis_member):
    url = f"{TAPIS}jobs/{job.uuid}/sendEvent"
    bad = tapis_member.post(
        url, {"eventDetail": "two words", "colour": "red"}, format="json"
    ).json()
    assert bad["status"] == "error"
    assert bad["result"]["errors"] == ["colour: unknown field"]
    bad = tapis_member.post(url, {"eventDetail": "two words"}, format="json").json()
    assert sorted(bad["result"]["errors"]) == [
        "eventData: is required: a non-empty string",
        "eventDetail: letters, digits and . _ : - only (it names a kind)",
    ]
    too_long = tapis_member.post(url, {"eventData": "x" * 5000}, format="json")
    assert too_long.status_code == 400 and "at most 4096" in too_long.json()["message"]
    Job.objects.filter(pk=job.pk).update(status="FAILED")
    ended = tapis_member.post(url, {"eventData": "late"}, format="json")
    assert ended.status_code == 409 and "has ended" in ended.json()["message"]
    assert not JobUserEvent.objects.exists()


def test_user_events_per_job_are_bounded(job, tapis_member, member, monkeypatch):
    monkeypatch.setattr("tapis.job_actions.USER_EVENTS_PER_JOB_MAX", 2)
    url = f"{TAPIS}jobs/{job.uuid}/sendEvent"
    for n in range(2):
        assert tapis_member.post(url, {"eventData": f"e{n}"}, format="json").status_code == 200
    full = tapis_member.post(url, {"eventData": "one more"}, format="json")
    assert full.status_code == 409 and "holds 2 user events" in full.json()["message"]
    assert USER_EVENTS_PER_JOB_MAX == 1000
