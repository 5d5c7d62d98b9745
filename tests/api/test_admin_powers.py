"""Admin powers follow Django's superuser flag and explicit permissions, never ``is_staff``
alone (accounts.permissions is the one place that decides)."""

import json

import pytest
from django.contrib.auth.models import Permission
from django.utils import timezone

from jobs.models import Job
from reservations.models import Reservation
from tests.api.conftest import API, PORTAL, _client, put_state

pytestmark = pytest.mark.django_db

RESERVATION = {
    "name": "r2",
    "cluster_id": 1,
    "start": "2030-01-01T00:00:00Z",
    "end": "2030-01-02T00:00:00Z",
}


def _grant(user, *codenames):
    """Give ``user`` model permissions ("app.codename"); has_perm caches them per object,
    so callers reload the user afterwards."""
    for dotted in codenames:
        app, codename = dotted.split(".")
        user.user_permissions.add(
            Permission.objects.get(content_type__app_label=app, codename=codename)
        )


def _user(model, username, **flags):
    return model.objects.create_user(
        username=username, email=f"{username}@example.org", password="pw-" + username, **flags
    )


@pytest.fixture
def staff(django_user_model):
    """Let into the admin site, and nothing more."""
    return _user(django_user_model, "staffer", is_staff=True)


@pytest.fixture
def staff_with_perms(django_user_model):
    user = _user(django_user_model, "operator", is_staff=True)
    _grant(
        user,
        "jobs.view_job",
        "jobs.change_job",
        "jobs.delete_job",
        "reservations.add_reservation",
        "reservations.change_reservation",
        "reservations.delete_reservation",
    )
    return django_user_model.objects.get(pk=user.pk)


@pytest.fixture
def superuser(django_user_model):
    return _user(django_user_model, "boss", is_superuser=True)


@pytest.fixture
def jobs(submit, slave):
    return {
        "queued": submit(),
        "finished": put_state(submit(), "FINISHED", slave=slave, gpu_ids=[0]),
    }


def _cancel(client, job):
    return client.put(
        f"{API}jobs/{job.uuid}/state/status", data="CANCELLED", content_type="text/plain"
    )


def _reserve(client):
    return client.post(
        PORTAL + "reservations", data=json.dumps(RESERVATION), content_type="application/json"
    )


def test_staff_without_permissions_has_no_admin_powers(staff, jobs, responses):
    client = _client(responses, staff)
    assert _cancel(client, jobs["queued"]).status_code == 403
    assert client.delete(f"{API}jobs/{jobs['finished'].uuid}?real=true").status_code == 403
    assert client.delete(f"{API}jobs/{jobs['queued'].uuid}?force=true").status_code == 403
    assert client.delete(f"{API}jobs/{jobs['finished'].uuid}").status_code == 403
    assert _reserve(client).status_code == 403
    # nothing changed
    assert Job.objects.get(pk=jobs["queued"].pk).status == "QUEUED"
    assert Job.objects.get(pk=jobs["finished"].pk).status == "FINISHED"
    assert not Reservation.objects.exists()
    # and the sanitised view of others' jobs, like any non-member
    shown = client.get(f"{API}jobs/{jobs['queued'].uuid}").json()
    assert shown["name"].startswith("job-") and shown["request"]["docker"]["image"] == "hidden"
    me = client.get(PORTAL + "me").json()
    assert me["is_admin"] is False


def test_staff_cannot_change_or_delete_reservations(staff, slave, responses):
    from reservations.services import reservation_create

    now = timezone.now()
    reservation = reservation_create(
        name="r", cluster=slave.cluster, start=now, end=now + timezone.timedelta(hours=1)
    )
    client = _client(responses, staff)
    path = f"{PORTAL}reservations/{reservation.uuid}"
    patched = client.patch(path, data=json.dumps({"name": "x"}), content_type="application/json")
    assert patched.status_code == 403
    assert client.delete(path).status_code == 403
    assert Reservation.objects.get(pk=reservation.pk).name == "r"
    # the web pages refuse too
    client.force_login(staff)
    assert client.get("/reservations/new/").status_code == 403


def test_staff_cannot_submit_into_a_project_they_are_not_in(
    staff, slave, project, hello_world, responses
):
    client = _client(responses, staff)
    body = {**hello_world, "owner": {"projectUrn": project.name}}
    response = client.post(API + "jobs", data=json.dumps(body), content_type="application/json")
    assert response.status_code == 403
    assert not Job.objects.exists()


@pytest.mark.parametrize("who", ["superuser", "staff_with_perms"])
def test_superuser_and_explicit_permissions_have_the_powers(who, request, jobs, responses):
    user = request.getfixturevalue(who)
    client = _client(responses, user)
    assert _cancel(client, jobs["queued"]).status_code == 200
    assert Job.objects.get(pk=jobs["queued"].pk).status == "CANCELLED"
    assert client.delete(f"{API}jobs/{jobs['finished'].uuid}?real=true").status_code == 204
    assert not Job.objects.filter(pk=jobs["finished"].pk).exists()
    assert _reserve(client).status_code == 201
    assert Reservation.objects.filter(name="r2").exists()
    shown = client.get(f"{API}jobs/{jobs['queued'].uuid}").json()
    assert shown["name"] == "HelloWorld"  # seen in full


def test_each_permission_grants_only_its_power(django_user_model, jobs, responses):
    """change_job lets one cancel, but not remove rows; add_reservation does not delete."""
    user = _user(django_user_model, "canceller", is_staff=True)
    _grant(user, "jobs.change_job", "reservations.add_reservation")
    user = django_user_model.objects.get(pk=user.pk)
    client = _client(responses, user)
    assert _cancel(client, jobs["queued"]).status_code == 200
    assert client.delete(f"{API}jobs/{jobs['finished'].uuid}?real=true").status_code == 403
    assert Job.objects.filter(pk=jobs["finished"].pk).exists()
    created = _reserve(client)
    assert created.status_code == 201
    uuid = created.json()["uuid"]
    assert client.delete(f"{PORTAL}reservations/{uuid}").status_code == 403
    assert Reservation.objects.filter(uuid=uuid).exists()


def test_inactive_superuser_has_no_powers(django_user_model):
    from accounts import permissions

    user = _user(django_user_model, "gone", is_superuser=True, is_active=False)
    assert not permissions.may_act_on_all_jobs(user)
    assert not permissions.may_manage_reservations(user, "add")
    assert not permissions.user_is_admin(user)
