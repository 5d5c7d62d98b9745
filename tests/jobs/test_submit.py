"""job_submit: validation, membership, reservations, storage policy, redaction, ticks."""

import copy
from datetime import timedelta

import pytest
from django.utils import timezone

from core.errors import NotAllowed
from jobs.models import Job, JobEvent, JobPullSecret
from jobs.spec import SpecError
from jobs.user_actions.services import job_submit
from reservations.models import Reservation

pytestmark = pytest.mark.django_db


def test_hello_world_is_queued_with_indexed_columns(
    submit, member, project, recorded_tasks, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        job = submit()
    assert job.status == "QUEUED"
    assert (job.gpus, job.cpus, job.cpu_memory_gb, job.requested_cluster_id) == (1, 2, 1, 1)
    assert job.min_duration_s == 7 * 86400 and job.max_duration_s == 14 * 86400
    assert job.request["scheduling"]["minDuration"] == "1 week"
    assert job.owner == member and job.project == project
    assert {"created", "QUEUED", "statusUpdated"} <= set(job.event_times)
    assert JobEvent.objects.filter(job=job, new_state="QUEUED").count() == 1
    assert ("jobs.tasks.scheduler_tick", ()) in recorded_tasks


def test_hold_gives_onhold_and_no_tick(submit, recorded_tasks, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        job = submit(hold=True)
    assert job.status == "ONHOLD"
    assert recorded_tasks == []


def test_non_member_is_refused_and_nothing_is_written(outsider, project, slave, hello_world):
    with pytest.raises(NotAllowed):
        job_submit(user=outsider, project=project, document=hello_world)
    assert Job.objects.count() == 0


def test_invalid_document_writes_nothing(submit, hello_world):
    hello_world["request"]["resources"]["gpus"] = -1
    with pytest.raises(SpecError) as caught:
        submit(hello_world)
    assert "request.resources.gpus" in str(caught.value)
    assert Job.objects.count() == 0 and JobEvent.objects.count() == 0


def test_bad_json_text_reports_line_and_column(submit):
    with pytest.raises(SpecError) as caught:
        submit('{\n  "name": "x",\n  "request": {,}\n}')
    assert "line 3" in str(caught.value)


def test_v1_document_is_converted(submit):
    v1 = {
        "jobDefinition": {
            "name": "old",
            "clusterId": 1,
            "dockerImage": "debian:stable",
            "command": "",
            "resources": {"cpuCores": 1, "gpus": 0, "systemMemory": 2000},
        }
    }
    job = submit(v1)
    assert job.name == "old" and job.cpu_memory_gb == 2
    assert job.request["docker"]["command"] == []
    assert "converted from a v1" in job.events.first().message


def test_registry_password_is_kept_only_for_pulling(submit, hello_world):
    hello_world["request"]["docker"]["image"] = "deploy:s3cretPW@registry.example.org:5000/a/b:1"
    job = submit(hello_world)
    assert "s3cretPW" not in str(job.request)
    assert job.request["docker"]["image"] == "deploy:XXXX@registry.example.org:5000/a/b:1"
    assert JobPullSecret.objects.get(job=job).image.startswith("deploy:s3cretPW@")


def test_reservation_must_exist_and_entitle(
    submit, hello_world, cluster, member, project, other_project
):
    now = timezone.now()
    hello_world["request"]["scheduling"]["reservationIds"] = [
        "f6dbca7b-58fd-47e3-9ac4-9ad33e7f6030"
    ]
    with pytest.raises(SpecError) as caught:
        submit(copy.deepcopy(hello_world))
    assert "request.scheduling.reservationIds[0]: no reservation" in str(caught.value)

    reservation = Reservation.objects.create(
        name="exam", cluster=cluster, start=now + timedelta(hours=1), end=now + timedelta(hours=2)
    )
    reservation.projects.add(other_project)  # lists someone else
    hello_world["request"]["scheduling"]["reservationIds"] = [str(reservation.uuid)]
    with pytest.raises(SpecError) as caught:
        submit(copy.deepcopy(hello_world))
    assert "not entitled to reservation 'exam'" in str(caught.value)

    reservation.projects.add(project)
    job = submit(copy.deepcopy(hello_world))
    assert job.reservation_ids == [str(reservation.uuid)]

    # A reservation that lists nobody admits every job that names it (the UUID is the ticket),
    # as the scheduler's ReservationWindow.admits does.
    reservation.projects.clear()
    assert submit(copy.deepcopy(hello_world)).reservation_ids == [str(reservation.uuid)]


@pytest.mark.parametrize(
    ("host_path", "message"),
    [
        ("/etc/", "not offered to this project"),
        ("/var/run/docker.sock", "Docker socket"),
        ("/project/../etc/", ".."),
        ("relative/path", "absolute path"),
    ],
)
def test_forbidden_host_paths_are_refused(submit, hello_world, host_path, message):
    hello_world["request"]["docker"]["storage"] = [
        {"hostPath": host_path, "containerPath": "/data"}
    ]
    with pytest.raises(SpecError) as caught:
        submit(hello_world)
    text = str(caught.value)
    assert "request.docker.storage[0]" in text and message in text
    assert Job.objects.count() == 0


@pytest.mark.parametrize(
    "storage",
    [
        [{"containerPath": "/project"}],
        [{"hostPath": "/project/mycode/", "containerPath": "/work/code/"}],
        [{"hostPath": "PROJECT_SHARE_AUTO", "containerPath": "/data"}],
        [{"hostPath": ".ssh"}],
        [{"hostPath": "tmpfs", "containerPath": "/scratch", "sizeGb": 2}],
        ["/project_scratch"],
    ],
)
def test_offered_storage_is_accepted(submit, hello_world, storage):
    hello_world["request"]["docker"]["storage"] = storage
    job = submit(hello_world)
    assert job.status == "QUEUED"


def test_not_after_in_the_past_is_refused_at_submit(submit, hello_world):
    hello_world["request"]["scheduling"]["notAfter"] = (
        timezone.now() - timedelta(minutes=5)
    ).strftime("%Y-%m-%dT%H:%M:%SZ")
    with pytest.raises(SpecError) as info:
        submit(hello_world)
    [error] = info.value.errors
    assert error.path == "request.scheduling.notAfter"
    assert error.message.startswith("is in the past")
    assert not Job.objects.exists()


def test_not_after_in_the_future_is_accepted(submit, hello_world):
    hello_world["request"]["scheduling"]["notAfter"] = (
        timezone.now() + timedelta(hours=1)
    ).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert submit(hello_world).status == "QUEUED"
