"""GPULab v4.0 job endpoints: submit, list (filters, sort, paging), read, act, delete."""

import copy
import json

import pytest
from django.utils import timezone

from jobs.models import Job, JobExplanation
from tests.api.conftest import API, put_state
from tests.conftest import HELLO_WORLD

pytestmark = pytest.mark.django_db

VISION = "urn:publicid:IDN+gpuportal.local+project+vision"


# --- submit -------------------------------------------------------------------------------


def test_submit_answers_the_uuid_as_plain_text(submit_api, member, project):
    response = submit_api()
    assert response.status_code == 201
    assert response["Content-Type"].startswith("text/plain")
    job = Job.objects.get(uuid=response.content.decode())
    assert (job.owner, job.project, job.status) == (member, project, "QUEUED")
    assert response["Location"].endswith(f"/api/gpulab/v4.0/jobs/{job.uuid}")


def test_submit_fires_a_tick(submit_api, recorded_tasks, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        assert submit_api().status_code == 201
    assert ("jobs.tasks.scheduler_tick", ()) in recorded_tasks


def test_submit_on_hold(submit_api):
    response = submit_api(query="?hold=true")
    assert Job.objects.get(uuid=response.content.decode()).status == "ONHOLD"


@pytest.mark.parametrize(
    "project_ref",
    [
        VISION,
        "vision",
        "urn:publicid:IDN+ilabt.imec.be+project+vision",  # a GPULab user's URN: name fallback
    ],
)
def test_submit_picks_the_project_by_urn_or_name(
    submit_api, project, other_project, member, project_ref
):
    from accounts.models import Membership

    Membership.objects.create(user=member, project=other_project)  # two projects now
    document = {
        **copy.deepcopy(HELLO_WORLD),
        "owner": {"projectUrn": project_ref, "userUrn": "ignored", "userEmail": "x@y.z"},
        "deploymentEnvironment": "staging",
    }
    response = submit_api(document)
    assert response.status_code == 201, response.content
    assert Job.objects.get(uuid=response.content.decode()).project == project


def test_submit_to_a_project_i_am_not_in_is_403(submit_api, outsider_client, project):
    document = {**copy.deepcopy(HELLO_WORLD), "owner": {"projectUrn": VISION}}
    response = submit_api(document, client=outsider_client)
    assert response.status_code == 403
    assert "not a member" in response.json()["error"]
    assert Job.objects.count() == 0


def test_submit_v1_document(submit_api):
    v1 = {
        "jobDefinition": {
            "name": "legacy",
            "clusterId": 1,
            "dockerImage": "debian:stable",
            "command": "",
            "resources": {"gpus": 1, "cpuCores": 2, "systemMemory": 2000},
        }
    }
    response = submit_api(v1)
    assert response.status_code == 201, response.content
    job = Job.objects.get(uuid=response.content.decode())
    assert (job.name, job.cpus, job.cpu_memory_gb) == ("legacy", 2, 2)


def test_submit_with_form_content_type_still_reads_json(member_client, slave, project):
    """``curl -d @job.json`` sends application/x-www-form-urlencoded."""
    response = member_client.post(
        API + "jobs", data=json.dumps(HELLO_WORLD), content_type="application/x-www-form-urlencoded"
    )
    assert response.status_code == 201, response.content


def test_unsatisfiable_request_is_refused(submit_api):
    document = copy.deepcopy(HELLO_WORLD)
    document["request"]["resources"]["gpus"] = 64
    response = submit_api(document)
    assert response.status_code == 400
    assert Job.objects.count() == 0


# --- read ---------------------------------------------------------------------------------


def test_read_back_after_actions(member_client, submit_api):
    job_uuid = submit_api().content.decode()
    status = f"{API}jobs/{job_uuid}/state/status"
    assert member_client.put(status, data="ONHOLD", content_type="text/plain").status_code == 200
    assert member_client.get(f"{API}jobs/{job_uuid}").json()["state"]["status"] == "ONHOLD"
    answer = member_client.put(status, data="QUEUED", content_type="text/plain")
    assert answer.json()["state"]["status"] == "QUEUED"
    answer = member_client.put(status, data="CANCELLED", content_type="text/plain")
    assert answer.json()["state"]["status"] == "CANCELLED"
    events = member_client.get(f"{API}jobs/{job_uuid}/debug").json()
    changes = [e["newState"] for e in events if e["type"] == "Status Change"]
    assert changes == ["QUEUED", "ONHOLD", "QUEUED", "CANCELLED"]
    # the reason, as a message event that `gpulab-cli debug` prints
    assert events[-1]["type"] == "Info" and events[-1]["msg"].startswith("CANCELLED: cancelled by")


def test_cancel_running_job_stops_it_in_the_background(
    member_client, running_job, recorded_tasks, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = member_client.put(
            f"{API}jobs/{running_job.uuid}/state/status",
            data="CANCELLED",
            content_type="text/plain",
        )
    assert response.json()["state"]["status"] == "CANCELLING"
    assert ("jobs.tasks.job_stop", (running_job.pk,)) in recorded_tasks


def test_halt_records_a_halt_event(member_client, running_job):
    response = member_client.put(
        f"{API}jobs/{running_job.uuid}/state/status", data="MUSTHALT", content_type="text/plain"
    )
    state = response.json()["state"]
    assert state["status"] == "MUSTHALT"
    assert state["scheduling"]["haltEvents"][0]["reason"] == "User requested fallback manually"


def test_explain(member_client, outsider_client, submit):
    job = submit()
    Job.objects.filter(pk=job.pk).update(end_reason="secret reason")
    JobExplanation.objects.create(job=job, lines=["gpu1: needs 1 free GPU, has 0"])
    mine = member_client.get(f"/api/portal/jobs/{job.uuid}/explain").json()
    assert mine["queued_explanations"] == ["gpu1: needs 1 free GPU, has 0"]
    assert mine["end_reason"] == "secret reason"
    assert outsider_client.get(f"/api/portal/jobs/{job.uuid}/explain").json()["end_reason"] is None


# --- delete -------------------------------------------------------------------------------


def test_delete_hides_then_real_removes(member_client, admin_client, finished_job):
    path = f"{API}jobs/{finished_job.uuid}"
    refused = member_client.delete(path)  # GPULab: an ended job needs finished=true
    assert refused.status_code == 409
    assert "finished=true" in refused.json()["error"]
    assert member_client.get(path).json()["state"]["status"] == "FINISHED"
    assert member_client.delete(path + "?finished=true").status_code == 204
    assert member_client.get(path).json()["state"]["status"] == "DELETED"
    assert member_client.delete(path + "?finished=true").status_code == 204  # nothing to do
    assert admin_client.delete(path + "?real=true").status_code == 204
    assert member_client.get(path).status_code == 404
    assert not Job.objects.filter(uuid=finished_job.uuid).exists()


@pytest.mark.parametrize("hold", [False, True])
def test_delete_revokes_a_pending_job(member_client, submit, hold):
    job = submit(hold=hold)
    path = f"{API}jobs/{job.uuid}"
    assert member_client.delete(path).status_code == 204
    job.refresh_from_db()
    assert job.status == "DELETED"
    assert job.events.filter(new_state="CANCELLED").exists()  # revoked: cancelled, then hidden


def test_force_real_delete_of_a_pending_job_is_for_admins(member_client, admin_client, submit):
    job = submit()
    path = f"{API}jobs/{job.uuid}?real=true&force=true"
    assert member_client.delete(path).status_code == 403
    assert admin_client.delete(path).status_code == 204
    assert not Job.objects.filter(pk=job.pk).exists()


def test_delete_running_job_is_409(member_client, running_job):
    response = member_client.delete(f"{API}jobs/{running_job.uuid}")
    assert response.status_code == 409
    assert "cancel it first" in response.json()["error"]


# --- list ---------------------------------------------------------------------------------


@pytest.fixture
def zoo(submit, slave, outsider, other_project, member):
    """One job per interesting state, plus an outsider's job and an interactive one."""
    jobs = {
        "queued": submit(),
        "onhold": submit(hold=True),
        "assigned": put_state(submit(), "ASSIGNED", slave=slave, gpu_ids=[0]),
        "running": put_state(submit(), "RUNNING", slave=slave, gpu_ids=[1]),
        "finished": put_state(submit(), "FINISHED", slave=slave, gpu_ids=[2]),
        "failed": put_state(submit(), "FAILED"),
        "deleted": put_state(submit(), "DELETED", slave=slave),
        "theirs": submit(user=outsider, project=other_project),
    }
    interactive = copy.deepcopy(HELLO_WORLD)
    interactive["request"]["scheduling"]["interactive"] = True
    jobs["interactive"] = submit(interactive)
    return jobs


def _uuids(client, query=""):
    response = client.get(API + "jobs?page_size=200" + ("&" + query if query else ""))
    assert response.status_code == 200, response.content
    return {item["uuid"] for item in response.json()["items"]}


def _names(zoo, *names):
    return {str(zoo[n].uuid) for n in names}


def test_default_list_is_everything_but_deleted(member_client, zoo):
    everything = set(zoo) - {"deleted"}
    assert _uuids(member_client) == _names(zoo, *everything)


@pytest.mark.parametrize(
    "query,expected",
    [
        ("pending=true", {"queued", "onhold", "theirs", "interactive"}),
        ("running=true", {"running"}),
        ("finished=true", {"finished", "failed"}),
        ("deleted=true", {"deleted"}),
        (
            "pending=true&finished=true",
            {"queued", "onhold", "theirs", "interactive", "finished", "failed"},
        ),
        ("pending=false", {"assigned", "running", "finished", "failed"}),
        ("allowed_states=ASSIGNED,deleted", {"assigned", "deleted"}),
        ("allowed_states=RUNNING&pending=true", {"running"}),
        ("assigned_slave_name=gpu1", {"assigned", "running", "finished"}),
        ("assigned_slave_name=nope", set()),
        ("interactive=true", {"interactive"}),
        ("interactive=false&pending=true", {"queued", "onhold", "theirs"}),
        (
            "cluster_id=1",
            {
                "queued",
                "onhold",
                "assigned",
                "running",
                "finished",
                "failed",
                "theirs",
                "interactive",
            },
        ),
        ("cluster_id=2,3", set()),
        ("project_name=speech", set()),  # not my project: filtering cannot reveal owners
        ("user_name=bob", set()),
        ("project_name=vision&pending=true", {"queued", "onhold", "interactive"}),
        ("project_urn=" + VISION + "&running=true", {"running"}),
        (
            "user_urn=urn:publicid:IDN+gpuportal.local+user+alice&finished=true",
            {"finished", "failed"},
        ),
        ("user_urn=urn:publicid:IDN+elsewhere+user+alice", set()),
    ],
)
def test_list_filters(member_client, zoo, query, expected):
    assert _uuids(member_client, query) == _names(zoo, *expected)


def test_admin_filters_every_project(admin_client, zoo):
    assert _uuids(admin_client, "user_name=bob") == _names(zoo, "theirs")


def test_reservation_filter(member_client, member, project, slave):
    from jobs.user_actions.services import job_submit
    from reservations.services import reservation_create

    now = timezone.now()
    reservation = reservation_create(
        name="r",
        cluster=slave.cluster,
        start=now,
        end=now + timezone.timedelta(hours=1),
        projects=[project],
    )
    document = copy.deepcopy(HELLO_WORLD)
    document["request"]["scheduling"]["reservationIds"] = [str(reservation.uuid)]
    with_reservation = job_submit(user=member, project=project, document=document)
    job_submit(user=member, project=project, document=copy.deepcopy(HELLO_WORLD))
    assert _uuids(member_client, f"reservation_id={reservation.uuid}") == {
        str(with_reservation.uuid)
    }
    other = "11111111-2222-3333-4444-555555555555"
    assert _uuids(member_client, f"reservation_id={other}") == set()


def test_paging(member_client, submit):
    made = [str(submit().uuid) for _ in range(25)]
    first = member_client.get(API + "jobs").json()
    assert (first["page"], first["page_size"], first["total"], first["pages"]) == (1, 10, 25, 3)
    assert first["has_next"] is True
    seen = []
    for page in (1, 2, 3):
        data = member_client.get(API + f"jobs?page={page}&page_size=10").json()
        seen += [item["uuid"] for item in data["items"]]
    assert sorted(seen) == sorted(made) and len(set(seen)) == 25
    assert seen == list(reversed(made))  # newest first by default
    beyond = member_client.get(API + "jobs?page=9").json()
    assert beyond["items"] == [] and beyond["has_next"] is False


def test_sort(member_client, submit):
    names = ["b", "c", "a"]
    for name in names:
        document = copy.deepcopy(HELLO_WORLD)
        document["name"] = name
        submit(document)
    by_name = [i["name"] for i in member_client.get(API + "jobs?sort=name").json()["items"]]
    assert by_name == ["a", "b", "c"]
    by_name_desc = [i["name"] for i in member_client.get(API + "jobs?sort=-name").json()["items"]]
    assert by_name_desc == ["c", "b", "a"]
    oldest_first = [i["name"] for i in member_client.get(API + "jobs?sort=created").json()["items"]]
    assert oldest_first == names
    multi = member_client.get(API + "jobs?sort=status,-updated").json()["items"]
    assert len(multi) == 3


def test_other_user_running(member_client, zoo, slave):
    """``gpulab-cli jobs -u`` sends user_urn=<me>&other_user_running=True."""
    put_state(zoo["theirs"], "RUNNING", slave=slave, gpu_ids=[3])
    me = "urn:publicid:IDN+gpuportal.local+user+alice"
    mine = set(zoo) - {"deleted", "theirs"}
    assert _uuids(member_client, f"user_urn={me}") == _names(zoo, *mine)
    assert _uuids(member_client, f"user_urn={me}&other_user_running=True") == _names(
        zoo, *mine, "theirs"
    )
    response = member_client.get(API + "jobs?other_user_running=sometimes")
    assert response.status_code == 400


def test_event_times_have_milliseconds_so_short_jobs_show_a_duration(member_client, submit):
    """A job that ran 0.4 s used to show RUNNING and FINISHED at the same whole second."""
    import re

    job = submit()
    times = member_client.get(f"{API}jobs/{job.uuid}").json()["state"]["eventTimes"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", times["QUEUED"])
