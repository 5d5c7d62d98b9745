"""GPULab's own examples, verbatim (tests/jobs/seed_texts.py), are accepted on the default
configuration (issue 26 item 1): its /project_ghent storage (PORTAL_STORAGE_ALIASES), a bucket
name with spaces, interactive with a notBefore long past and a notAfter years ahead, and
`"hostPort": 8080`; the reservation they name is in the demo set-up (portal/bootstrap.py).
That they also run is tests/integration/test_seed_examples_run.py, on real Docker."""

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from jobs.execution.container_spec import job_mounts
from jobs.models import Job
from jobs.spec import SpecError
from portal.bootstrap import seed_reservation_ensure
from tests.jobs import seed_texts as seed

pytestmark = pytest.mark.django_db


@pytest.fixture
def site(submit, member, project, slave):
    """The default configuration with the demo set-up's reservation (made for ``project``)."""
    seed_reservation_ensure(cluster=slave.cluster, project=project, admin=member)
    return submit


def refusal(submit, document) -> dict[str, str]:
    with pytest.raises(SpecError) as caught:
        submit(document)
    return {error.path: error.message for error in caught.value.errors}


def test_the_broken_examples_are_refused_with_the_repair_they_need(site):
    """As printed, the advanced job's JSON is broken: the portal names the line and the fix
    (the test then applies exactly that fix: seed_texts.commas_repaired)."""
    errors = refusal(site, seed.SCHEDULING_ADVANCED_JOB)
    assert errors == {
        "(json)": "invalid JSON at line 13 column 23: trailing comma: remove the ',' before "
        "the end of the object"
    }
    assert Job.objects.count() == 0


def test_the_advanced_scheduling_job_is_accepted(site, settings, slave, project):
    job = site(seed.commas_repaired(seed.SCHEDULING_ADVANCED_JOB))
    assert job.status == "QUEUED" and job.interactive
    request = job.request
    assert request["docker"]["storage"] == [
        {"hostPath": "/project_ghent/", "containerPath": "/project/"}
    ]
    assert request["scheduling"]["notBefore"] == "2019-12-31T23:00:00Z"
    assert request["scheduling"]["notAfter"] == "2029-12-31T23:00:00Z"
    assert request["scheduling"]["reservationIds"] == [seed.SEED_RESERVATION]
    assert (job.bucket_name, job.bucket_max) == ("aBucketName", 1)
    # /project_ghent is the project's share, as /project is.
    job.slave = slave
    (mount,) = job_mounts(job, slave)
    assert mount.host_path == f"{settings.PORTAL_STORAGE_BASE}/project/{project.name}"
    assert mount.container_path == "/project/" and mount.root == "/project_ghent"


def test_the_restartable_job_and_hello_world_are_accepted(site):
    restartable = site(seed.commas_repaired(seed.SCHEDULING_RESTARTABLE_JOB))
    assert restartable.restartable and not restartable.interactive
    hello = site(seed.REQUEST_V2_HELLOWORLD)  # valid JSON as printed
    assert hello.interactive and hello.request["docker"]["command"] == "echo 'Hello World!'"


def test_a_bucket_name_with_spaces_and_host_port_8080_are_accepted(site):
    document = json.loads(seed.REQUEST_V2_HELLOWORLD)
    document["request"]["scheduling"]["maxSimultaneousJobs"] = json.loads(seed.SCHEDULING_BUCKET)
    document["request"]["docker"].update(seed.fragment(seed.REQUEST_V2_HOST_PORT))
    document["request"]["docker"].update(seed.fragment(seed.REQUEST_V2_STORAGE_PROJECT))
    job = site(document)
    assert (job.bucket_name, job.bucket_max) == ("my parameter sweep limit", 2)
    assert job.request["docker"]["portMappings"] == [
        {"containerPort": 80, "hostPort": 8080, "hostIp": None}
    ]


@pytest.mark.parametrize(
    ("port", "why"),
    [
        (80, "80 is refused (a privileged port (below 1024))"),
        (2375, "2375 is refused (a Docker engine port)"),
        (8000, "8000 is refused (the portal's web server)"),
        (2222, "2222 is refused (the portal's SSH gateway)"),
    ],
)
def test_the_default_port_policy_still_refuses_the_ports_that_are_not_the_jobs(site, port, why):
    document = json.loads(seed.REQUEST_V2_HELLOWORLD)
    document["request"]["docker"]["portMappings"] = [{"containerPort": 80, "hostPort": port}]
    assert refusal(site, document) == {"request.docker.portMappings[0].hostPort": why}


def test_an_interactive_job_with_a_future_not_before_stays_refused(site):
    document = json.loads(seed.commas_repaired(seed.SCHEDULING_ADVANCED_JOB))
    future = timezone.now() + timedelta(hours=1)
    document["request"]["scheduling"]["notBefore"] = future.isoformat()
    errors = refusal(site, document)
    assert list(errors) == ["request.scheduling.notBefore"]
    assert errors["request.scheduling.notBefore"].endswith(
        "an interactive job starts at once or fails, it cannot wait for notBefore"
    )
    document["request"]["scheduling"]["interactive"] = False  # a batch job may wait for it
    assert site(document).status == "QUEUED"


def test_without_the_alias_the_storage_example_is_refused(site, settings):
    settings.PORTAL_STORAGE_ALIASES = []
    errors = refusal(site, seed.commas_repaired(seed.SCHEDULING_ADVANCED_JOB))
    assert errors == {
        "request.docker.storage[0].hostPath": "/project_ghent/ is not offered to this project "
        "(storage roots: /project, /project_scratch)"
    }


def test_without_the_demo_reservation_the_example_naming_it_is_refused(submit):
    errors = refusal(submit, seed.commas_repaired(seed.SCHEDULING_ADVANCED_JOB))
    assert errors == {
        "request.scheduling.reservationIds[0]": f"no reservation with id {seed.SEED_RESERVATION}"
    }


def test_the_seed_reservation_blocks_nothing_and_is_made_once(site, member, project, slave):
    from reservations.models import Reservation

    seed_reservation_ensure(cluster=slave.cluster, project=project, admin=member)
    (reservation,) = Reservation.objects.all()
    assert str(reservation.uuid) == seed.SEED_RESERVATION
    assert reservation.end < timezone.now()
    assert list(reservation.projects.all()) == [project]
