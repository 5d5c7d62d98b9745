"""Every JSON answer of every endpoint matches its shape exactly (no extra keys, no missing ones),
for members, outsiders (sanitised) and anonymous callers."""

import copy

import pytest
from django.utils import timezone

from jobs.api.gpulab_json import job_to_gpulab
from jobs.models import Job
from jobs.transitions import job_event_add
from tests.api import shapes
from tests.api.conftest import API, PORTAL, put_state
from tests.conftest import HELLO_WORLD

pytestmark = pytest.mark.django_db


def test_validator_rejects_extra_and_missing_keys():
    spec = shapes.Obj({"a": int, "b": shapes.Opt(str)})
    assert shapes.check({"a": 1}, spec) == []
    assert any("unexpected key 'c'" in p for p in shapes.check({"a": 1, "c": 2}, spec))
    assert any("missing key 'a'" in p for p in shapes.check({}, spec))
    assert shapes.check({"a": True}, spec)  # a boolean is not an int


def _rich_job(submit, slave):
    """A running job with storage, ports, a halt event, explanations and a reservation id."""
    document = copy.deepcopy(HELLO_WORLD)
    document["request"]["docker"]["portMappings"] = [8080]
    document["request"]["docker"]["environment"] = {"A": "x", "B": 2, "C": True}
    document["request"]["docker"]["command"] = ["python", "-c", "print(1)"]
    document["request"]["docker"]["storage"] = [
        {"hostPath": "tmpfs", "containerPath": "/scratch", "sizeGb": 1}
    ]
    document["request"]["scheduling"]["maxSimultaneousJobs"] = {"bucketName": "b", "bucketMax": 2}
    document["request"]["extra"] = {"emailOnEnd": ["alice@example.org"]}
    job = submit(document)
    return put_state(
        job,
        "RUNNING",
        slave=slave,
        gpu_ids=[0, 1],
        cpu_ids=[0, 1],
        port_mappings=[{"containerPort": 8080, "hostPort": 40000, "hostIp": "0.0.0.0"}],
        queued_explanations=["needs 2 free GPUs, slave gpu1 has 1"],
        tally_increment=1.5,
        halt_events=[
            {
                "reason": "Score",
                "time": "2025-01-01T00:00:00Z",
                "startedJobUuids": [],
                "haltedJobUuids": [str(job.uuid)],
                "slaveName": "gpu1",
                "slaveInstance": "abc",
                "startedJobScores": [],
                "haltedJobScores": [0.5],
            }
        ],
    )


@pytest.mark.parametrize("status", ["QUEUED", "ONHOLD", "ASSIGNED", "RUNNING", "FINISHED"])
@pytest.mark.parametrize("who", ["member", "outsider", "admin"])
def test_job_object_shape_in_every_state(clients, submit, slave, status, who):
    job = submit()
    if status != "QUEUED":
        put_state(job, status, slave=slave if status != "ONHOLD" else None, gpu_ids=[0])
    response = clients[who].get(f"{API}jobs/{job.uuid}")
    assert response.status_code == 200
    shapes.assert_shape(response.json(), shapes.JOB)
    resources = response.json()["state"]["resources"]
    assert (resources is None) == (status in ("QUEUED", "ONHOLD", "ASSIGNED"))


def test_rich_job_shape_for_every_viewer(clients, submit, slave, member):
    job = _rich_job(submit, slave)
    for who in ("member", "outsider", "admin"):
        data = clients[who].get(f"{API}jobs/{job.uuid}").json()
        shapes.assert_shape(data, shapes.JOB)
    # anonymous viewers (e.g. a public web page) through the presenter directly
    from django.contrib.auth.models import AnonymousUser

    shapes.assert_shape(job_to_gpulab(job, viewer=AnonymousUser()), shapes.JOB)


def test_member_sees_full_job(member_client, running_job):
    data = member_client.get(f"{API}jobs/{running_job.uuid}").json()
    assert data["name"] == "HelloWorld"
    assert data["description"] == "Hello world!"
    assert data["owner"] == {
        "projectUrn": "urn:publicid:IDN+gpuportal.local+project+vision",
        "userUrn": "urn:publicid:IDN+gpuportal.local+user+alice",
        "userEmail": "alice@example.org",
    }
    assert data["request"]["docker"]["image"] == "debian:stable"
    resources = data["state"]["resources"]
    assert resources["slaveName"] == "gpu1"
    assert resources["slaveHost"] == "gpu1.example.org"
    assert resources["gpuIds"] == [0]
    assert resources["gpuMemoryGb"] == 32
    assert resources["portMappings"] == [
        {"containerPort": 80, "hostPort": 32768, "hostIp": "0.0.0.0"}
    ]
    assert data["state"]["scheduling"]["assignedSlaveName"] == "gpu1"
    assert data["state"]["eventTimes"]["RUNNING"] is not None
    assert data["restartInfo"] == {"initialJobUuid": str(running_job.uuid), "restartCount": 0}


def test_outsider_sees_sanitised_job(outsider_client, submit, slave):
    job = _rich_job(submit, slave)
    job.reservation_ids = []
    data = outsider_client.get(f"{API}jobs/{job.uuid}").json()
    assert data["name"] == f"job-{str(job.uuid)[:6]}"
    assert data["description"] is None
    assert data["owner"] == {
        "projectUrn": "urn:publicid:IDN+hidden+project+hidden",
        "userUrn": "urn:publicid:IDN+hidden+user+hidden",
        "userEmail": "hidden@hidden.hidden",
    }
    assert data["request"]["docker"]["image"] == "hidden"
    assert data["request"]["docker"]["environment"] == {}
    assert data["request"]["docker"]["command"] == []
    assert all(v == [] for v in data["request"]["extra"].values())
    assert data["request"]["scheduling"]["maxSimultaneousJobs"] is None
    assert data["state"]["resources"]["portMappings"] == []
    # logged-in outsiders still see where it runs (GPULab does the same)
    assert data["state"]["resources"]["slaveName"] == "gpu1"


def test_anonymous_presenter_hides_hosts_and_ids(running_job):
    from django.contrib.auth.models import AnonymousUser

    data = job_to_gpulab(running_job, viewer=AnonymousUser())
    resources = data["state"]["resources"]
    assert resources["slaveHost"] == "hidden"
    assert resources["slaveName"] == "hidden"
    assert resources["slaveInstanceId"] == "hidden"
    assert resources["gpuIds"] == [] and resources["cpuIds"] == []
    assert data["state"]["scheduling"]["assignedInstanceId"] == "hidden"
    assert data["name"].startswith("job-")


def test_sanitised_reservation_ids_become_zero_uuid(outsider_client, member, project, slave):
    from jobs.user_actions.services import job_submit
    from reservations.services import reservation_create

    now = timezone.now()
    reservation = reservation_create(
        name="r",
        cluster=slave.cluster,
        start=now,
        end=now + timezone.timedelta(days=1),
        projects=[project],
    )
    document = copy.deepcopy(HELLO_WORLD)
    document["request"]["scheduling"]["reservationIds"] = [str(reservation.uuid)]
    job = job_submit(user=member, project=project, document=document)
    data = outsider_client.get(f"{API}jobs/{job.uuid}").json()
    assert data["request"]["scheduling"]["reservationIds"] == [
        "00000000-0000-0000-0000-000000000000"
    ]


def test_job_list_shape(clients, submit, slave, finished_job, running_job):
    submit()
    for who in ("member", "outsider", "admin"):
        response = clients[who].get(API + "jobs")
        assert response.status_code == 200
        shapes.assert_shape(response.json(), shapes.JOB_LIST)
        assert response.json()["total"] == 3


def test_debug_events_shape(member_client, admin_client, running_job):
    job_event_add(job=running_job, message="pulled the image")
    for client in (member_client, admin_client):
        response = client.get(f"{API}jobs/{running_job.uuid}/debug")
        assert response.status_code == 200
        events = response.json()
        shapes.assert_shape(events, shapes.DEBUG_EVENTS)
        assert events[0]["type"] == "Status Change" and events[0]["newState"] == "QUEUED"
        assert events[-1] == {
            "jobId": str(running_job.uuid),
            "type": "Info",
            "time": events[-1]["time"],
            "newState": None,
            "msg": "pulled the image",
        }


def test_cluster_and_slave_shapes(clients, running_job, slave):
    for who, client in clients.items():
        clusters = client.get(API + "clusters")
        slaves = client.get(API + "slaves")
        assert clusters.status_code == 200 and slaves.status_code == 200, who
        shapes.assert_shape(clusters.json(), shapes.CLUSTER_LIST)
        shapes.assert_shape(slaves.json(), shapes.SLAVE_LIST)


def test_slave_resources_count_jobs_holding_resources(member_client, running_job, submit, slave):
    submit()  # queued: holds nothing
    info = member_client.get(API + "slaves").json()[0]
    assert info["gpu"] == {"systemTotal": 4, "acquired": 4, "used": 1, "available": 3}
    assert info["cpu"] == {"systemTotal": 16, "acquired": 16, "used": 2, "available": 14}
    assert info["cpuMemoryMb"]["used"] == 1024
    assert info["worker"]["used"] == 1
    assert info["gpuModel"] == [
        {"vendor": "NVIDIA", "name": "Tesla V100-PCIE-32GB", "memoryMb": 32768}
    ]
    assert info["cudaVersionMajor"] == 12 and info["cudaVersionFull"] == "12.2"
    assert info["activeJobUuids"] == [str(running_job.uuid)]
    cluster = member_client.get(API + "clusters").json()[0]
    assert cluster["slaveCount"] == 1
    assert cluster["gpu"]["available"] == 3
    assert cluster["haveAccess"] is True


def test_anonymous_slaves_hide_hosts_and_ids(anon_client, running_job, slave):
    info = anon_client.get(API + "slaves").json()[0]
    assert info["host"] == "hidden"
    assert info["instanceId"] == "hidden"
    assert info["activeJobUuids"] == []
    assert slave.host not in anon_client.get(API + "slaves").content.decode()
    cluster = anon_client.get(API + "clusters").json()[0]
    assert cluster["haveAccess"] is None


def test_private_cluster_access(member_client, outsider_client, cluster, project, slave):
    cluster.is_private = True
    cluster.save()
    cluster.owner_projects.add(project)
    mine = member_client.get(API + "clusters").json()[0]
    theirs = outsider_client.get(API + "clusters").json()[0]
    assert mine["haveAccess"] is True and theirs["haveAccess"] is False
    assert mine["allowedProjects"] == ["urn:publicid:IDN+gpuportal.local+project+vision"]


def test_portal_endpoint_shapes(member_client, admin_client, submit, slave, project):
    job = submit()
    version = member_client.get(API + "version")
    shapes.assert_shape(version.json(), shapes.VERSION)
    explain = member_client.get(f"{PORTAL}jobs/{job.uuid}/explain")
    shapes.assert_shape(explain.json(), shapes.EXPLANATION)
    converted = member_client.post(PORTAL + "convert", data=HELLO_WORLD, format="json")
    shapes.assert_shape(converted.json(), shapes.CANONICAL_JOB)
    shapes.assert_shape(member_client.get(PORTAL + "token").json(), shapes.TOKEN)
    shapes.assert_shape(
        member_client.get(PORTAL + "projects").json(), shapes.ListOf(shapes.PROJECT)
    )
    shapes.assert_shape(member_client.get(PORTAL + "me").json(), shapes.ME)
    now = timezone.now()
    created = admin_client.post(
        PORTAL + "reservations",
        data={
            "name": "course",
            "cluster_id": slave.cluster_id,
            "start": now.isoformat(),
            "end": (now + timezone.timedelta(hours=2)).isoformat(),
            "projects": ["vision"],
        },
        format="json",
    )
    assert created.status_code == 201, created.content
    shapes.assert_shape(created.json(), shapes.RESERVATION)
    listed = member_client.get(PORTAL + "reservations").json()
    shapes.assert_shape(listed, shapes.ListOf(shapes.RESERVATION))
    assert listed[0]["entitled"] is True and listed[0]["projects"] is None
    # last: rotating the token ends this client's authentication
    shapes.assert_shape(member_client.post(PORTAL + "token").json(), shapes.TOKEN)


def test_error_bodies_have_one_shape(member_client, anon_client, submit):
    job = submit()
    finished = submit()
    Job.objects.filter(pk=finished.pk).update(status="FINISHED")
    answers = [
        anon_client.get(API + "jobs"),
        member_client.get(API + "jobs/not-a-uuid"),
        member_client.get(API + "jobs?page=0"),
        member_client.put(
            f"{API}jobs/{job.uuid}/state/status", data="NOPE", content_type="text/plain"
        ),
        member_client.post(API + "jobs", data="{", content_type="application/json"),
        member_client.delete(f"{API}jobs/{finished.uuid}"),
    ]
    assert [a.status_code for a in answers] == [401, 404, 400, 400, 400, 409]
    for answer in answers:
        shapes.assert_shape(answer.json(), shapes.ERROR)


def test_incomplete_halt_events_are_completed(member_client, running_job):
    """The client requires every HaltInfo field: gaps in a stored event are filled in."""
    running_job.halt_events = [{"reason": "whatever", "slaveName": None}]
    running_job.save()
    data = member_client.get(f"{API}jobs/{running_job.uuid}").json()
    shapes.assert_shape(data, shapes.JOB)
    event = data["state"]["scheduling"]["haltEvents"][0]
    assert event["reason"] == "Unknown" and event["slaveName"] == "" and event["time"]
