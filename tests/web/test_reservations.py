"""Reservations: timeline and details for everyone, management for admins."""

from datetime import timedelta

import pytest
from django.utils import timezone

from reservations.models import Reservation


@pytest.fixture
def reservation(cluster, project):
    now = timezone.now()
    r = Reservation.objects.create(
        name="CVPR deadline",
        cluster=cluster,
        start=now - timedelta(hours=2),
        end=now + timedelta(days=2),
        gpu_count=2,
    )
    r.projects.add(project)
    return r


def test_list_and_timeline(member_client, outsider_client, reservation):
    html = member_client.get("/reservations/").content.decode()
    assert "CVPR deadline" in html and 'id="reservation-timeline"' in html
    assert 'class="tl-bar active entitled"' in html
    assert ">entitled<" in html
    html = outsider_client.get("/reservations/").content.decode()
    assert "CVPR deadline" in html and ">not entitled<" in html
    assert 'id="reservation-new"' not in html


def test_detail(member_client, outsider_client, reservation):
    html = member_client.get(f"/reservations/{reservation.uuid}/").content.decode()
    assert "you are entitled" in html and str(reservation.uuid) in html
    assert 'id="reservation-edit"' not in html
    html = outsider_client.get(f"/reservations/{reservation.uuid}/").content.decode()
    assert "you are not entitled" in html


def test_only_admins_manage(member_client, reservation):
    assert member_client.get("/reservations/new/").status_code == 403
    assert member_client.post("/reservations/new/", {"name": "x"}).status_code == 403
    assert member_client.get(f"/reservations/{reservation.uuid}/edit/").status_code == 403
    assert (
        member_client.post(
            f"/reservations/{reservation.uuid}/delete/", {"confirmed": "1"}
        ).status_code
        == 403
    )
    assert Reservation.objects.filter(pk=reservation.pk).exists()


def form_data(cluster, **extra):
    return {
        "name": "maintenance",
        "description": "",
        "cluster": str(cluster.pk),
        "start": "2030-01-01T08:00",
        "end": "2030-01-02T08:00",
        **extra,
    }


def test_admin_creates_edits_and_deletes(
    admin_client_, cluster, slave, project, recorded_tasks, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client_.post(
            "/reservations/new/",
            form_data(cluster, slaves=[str(slave.pk)], gpu_count="2", projects=[str(project.pk)]),
        )
    r = Reservation.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/reservations/{r.uuid}/"
    assert r.start.isoformat() == "2030-01-01T08:00:00+00:00" and r.gpu_count == 2
    assert list(r.slaves.all()) == [slave] and list(r.projects.all()) == [project]
    assert ("jobs.tasks.scheduler_tick", ()) in recorded_tasks

    recorded_tasks.clear()
    with django_capture_on_commit_callbacks(execute=True):
        admin_client_.post(f"/reservations/{r.uuid}/edit/", form_data(cluster, name="renamed"))
    r.refresh_from_db()
    assert r.name == "renamed" and r.gpu_count is None and not r.slaves.exists()
    assert ("jobs.tasks.scheduler_tick", ()) in recorded_tasks

    # Without confirmation the delete asks first.
    response = admin_client_.post(f"/reservations/{r.uuid}/delete/")
    assert response.status_code == 200 and 'id="confirm-delete"' in response.content.decode()
    assert Reservation.objects.exists()
    admin_client_.post(f"/reservations/{r.uuid}/delete/", {"confirmed": "1"})
    assert not Reservation.objects.exists()


def test_form_validation(admin_client_, cluster, slave):
    from clusters.models import Cluster, Slave

    other = Cluster.objects.create(id=9)
    stranger = Slave.objects.create(name="far", cluster=other, docker_url="tcp://x")
    response = admin_client_.post(
        "/reservations/new/",
        form_data(cluster, end="2029-12-31T00:00", slaves=[str(stranger.pk)], gpu_count="1"),
    )
    assert response.status_code == 200
    errors = response.context["form"].errors
    assert "end" in errors and "slaves" in errors
    response = admin_client_.post("/reservations/new/", form_data(cluster, gpu_count="9"))
    assert "only 4 GPU(s)" in str(response.context["form"].errors["gpu_count"])
    assert not Reservation.objects.exists()


def test_reservation_queries_do_not_grow(member_client, count_queries, cluster, project, member):
    now = timezone.now()

    def add(n, offset):
        for i in range(n):
            r = Reservation.objects.create(
                name=f"r{offset + i}",
                cluster=cluster,
                start=now + timedelta(hours=i),
                end=now + timedelta(hours=i + 5),
            )
            r.projects.add(project)
            r.users.add(member)

    add(5, 0)
    few = {url: count_queries(member_client, url) for url in ("/reservations/", "/live/clusters/")}
    add(45, 5)
    for url, count in few.items():
        assert count_queries(member_client, url) == count, url


def test_a_reservation_that_lists_nobody_entitles_everyone_who_names_it(
    member_client, outsider_client, cluster
):
    now = timezone.now()
    r = Reservation.objects.create(
        name="open day", cluster=cluster, start=now, end=now + timedelta(hours=3)
    )
    for client in (member_client, outsider_client):
        html = client.get(f"/reservations/{r.uuid}/").content.decode()
        assert "you are entitled" in html and 'id="reservation-open"' in html
        assert f'"reservationIds": ["{r.uuid}"]' in html
