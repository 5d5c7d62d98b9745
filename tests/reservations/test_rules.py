"""Reservation rules once: entitlement and coverage agree between the model and the pure
scheduler's window, and one validation (service, API, web form, admin) refuses reservations that
cannot all be honoured at once."""

import copy
from datetime import timedelta

import pytest
from django.db import transaction
from django.test import Client
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rest_framework.test import APIClient

from accounts.models import Project
from clusters.models import Cluster, Gpu, Slave
from jobs.scheduler import run_cycle
from jobs.scheduler_bridge.snapshot import build_snapshot, reservation_windows, slave_state
from reservations.models import Reservation
from reservations.services import ReservationInvalid, reservation_create, reservation_validate
from tests.api.conftest import PORTAL
from tests.conftest import HELLO_WORLD

pytestmark = pytest.mark.django_db

USERS = ("ann", "ben", "cat")
PROJECTS = ("pa", "pb", "pc")
OTHER_ID = "f6dbca7b-58fd-47e3-9ac4-9ad33e7f6030"


def make_slave(cluster, name: str, gpus: int) -> Slave:
    slave = Slave.objects.create(
        name=name,
        cluster=cluster,
        docker_url="unix:///nonexistent.sock",
        cpus_total=16,
        memory_total_mb=64 * 1024,
        cuda_version="12.2",
        online=True,
        last_seen=timezone.now(),
    )
    for index in range(gpus):
        Gpu.objects.create(slave=slave, index=index, model="Tesla V100", declared=True)
    return slave


@pytest.fixture
def pool(make_user):
    clusters = [Cluster.objects.create(id=1), Cluster.objects.create(id=2)]
    slaves = [
        make_slave(clusters[0], "s1", 2),
        make_slave(clusters[0], "s2", 1),
        make_slave(clusters[1], "s3", 2),
    ]
    users = {name: make_user(name) for name in USERS}
    projects = {
        name: Project.objects.create(name=name, gid=7000 + i) for i, name in enumerate(PROJECTS)
    }
    return clusters, slaves, users, projects


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    cluster_index=st.integers(0, 1),
    slave_picks=st.sets(st.integers(0, 2)),
    listed_users=st.sets(st.sampled_from(USERS)),
    listed_projects=st.sets(st.sampled_from(PROJECTS)),
    job_user=st.sampled_from(USERS),
    job_project=st.sampled_from(PROJECTS),
    names_it=st.booleans(),
    names_other=st.booleans(),
)
def test_model_and_scheduler_window_agree(
    pool,
    cluster_index,
    slave_picks,
    listed_users,
    listed_projects,
    job_user,
    job_project,
    names_it,
    names_other,
):
    clusters, slaves, users, projects = pool
    now = timezone.now()
    with transaction.atomic():
        cluster = clusters[cluster_index]
        r = Reservation.objects.create(
            name="r", cluster=cluster, start=now - timedelta(hours=1), end=now + timedelta(hours=1)
        )
        r.slaves.set([slaves[i] for i in slave_picks if slaves[i].cluster_id == cluster.pk])
        r.users.set([users[u] for u in listed_users])
        r.projects.set([projects[p] for p in listed_projects])
        (window,) = reservation_windows(now)  # the bridge that feeds the scheduler
        ids = {str(r.uuid)} if names_it else set()
        if names_other:
            ids.add(OTHER_ID)
        r = Reservation.objects.prefetch_related("slaves", "users", "projects").get(pk=r.pk)
        model = r.admits(user=job_user, project=job_project, reservation_ids=ids)
        pure = window.admits(user=job_user, project=job_project, reservation_ids=frozenset(ids))
        assert model == pure
        # The documented meaning: named, and listed or nobody listed.
        assert model == (
            names_it
            and (
                not (listed_users or listed_projects)
                or (job_user in listed_users or job_project in listed_projects)
            )
        )
        for s in Slave.objects.prefetch_related("gpus"):
            assert r.covers(s) == window.covers(slave_state(s)), s.name
        transaction.set_rollback(True)


# --- the measured case: 2-GPU cluster, 1 GPU for A, an overlapping 2 GPUs for B --------------


@pytest.fixture
def duo(cluster):
    """Cluster 1 with one slave holding 2 GPUs."""
    return make_slave(cluster, "duo", 2)


@pytest.fixture
def window():
    now = timezone.now()
    return now - timedelta(hours=1), now + timedelta(days=1)


@pytest.fixture
def res_a(duo, cluster, project, window):
    return reservation_create(
        name="A", cluster=cluster, start=window[0], end=window[1], gpu_count=1, projects=[project]
    )


def test_service_refuses_overlap_naming_the_other_and_writes_nothing(
    res_a, cluster, other_project, window
):
    with pytest.raises(ReservationInvalid) as caught:
        reservation_create(
            name="B",
            cluster=cluster,
            start=window[0] + timedelta(hours=2),
            end=window[1] + timedelta(days=1),
            gpu_count=2,
            projects=[other_project],
        )
    ((field, rule),) = caught.value.errors
    assert field == "gpu_count" and "'A'" in rule and str(res_a.uuid) in rule
    assert list(Reservation.objects.values_list("name", flat=True)) == ["A"]


@pytest.mark.parametrize(
    ("shift", "gpu_count", "accepted"),
    [
        (timedelta(0), 1, True),  # 1 + 1 GPUs fit the 2
        (timedelta(days=2), 2, True),  # no overlap in time
        (timedelta(0), None, False),  # a whole reservation shares its slave with nobody
        (timedelta(hours=23), 2, False),  # overlaps only the last hour: still refused
    ],
)
def test_capacity_rule(res_a, cluster, window, shift, gpu_count, accepted):
    errors = reservation_validate(
        data={
            "name": "B",
            "cluster": cluster,
            "start": window[0] + shift,
            "end": window[1] + shift,
            "gpu_count": gpu_count,
        }
    )
    assert (errors == []) is accepted, errors
    if not accepted:
        assert errors[0][0] == "gpu_count" and "'A'" in errors[0][1]


def test_reservations_that_never_overlap_each_other_share_the_room(res_a, cluster, window):
    """A holds 1 GPU until its end, C 1 GPU after it: a third 1-GPU reservation across both
    fits (at no moment do more than 2 GPUs of the 2 go to reservations); 2 GPUs collide with
    A first and with C later, and both are named."""
    c = reservation_create(
        name="C", cluster=cluster, start=window[1], end=window[1] + timedelta(days=1), gpu_count=1
    )
    across = {"name": "B", "cluster": cluster, "start": window[0], "end": c.end}
    assert reservation_validate(data={**across, "gpu_count": 1}) == []
    ((field, rule),) = reservation_validate(data={**across, "gpu_count": 2})
    assert field == "gpu_count" and "'A'" in rule and "'C'" in rule


def test_other_slaves_do_not_collide(res_a, cluster, duo, window):
    res_a.slaves.set([duo])
    other = make_slave(cluster, "solo", 1)
    assert (
        reservation_validate(
            data={
                "name": "B",
                "cluster": cluster,
                "slaves": [other],
                "start": window[0],
                "end": window[1],
                "gpu_count": None,
            }
        )
        == []
    )


def test_editing_a_reservation_does_not_collide_with_itself(res_a):
    assert reservation_validate(data={"gpu_count": 2}, instance=res_a) == []


def test_rows_stored_past_the_rules_are_named_on_the_next_change(res_a, cluster, window):
    """Reservations written before this rule (or straight into the database) may collide; the
    next change of one of them names the other, so an admin can resolve it."""
    Reservation.objects.create(
        name="B", cluster=cluster, start=window[0], end=window[1], gpu_count=2
    )
    ((field, rule),) = reservation_validate(data={"name": "A2"}, instance=res_a)
    assert field == "gpu_count" and "'B'" in rule


def test_api_refuses_overlap(res_a, admin_user, window, other_project):
    client = APIClient()
    client.force_login(admin_user)
    payload = {
        "name": "B",
        "cluster_id": 1,
        "gpu_count": 2,
        "start": window[0].isoformat(),
        "end": window[1].isoformat(),
        "projects": [other_project.name],
    }
    response = client.post(PORTAL + "reservations", data=payload, format="json")
    assert response.status_code == 400, response.content
    (error,) = response.json()["errors"]
    assert error.startswith("gpu_count: ") and "'A'" in error
    # The API now refuses the gpu_count the form refuses, too.
    response = client.post(
        PORTAL + "reservations",
        data={**payload, "gpu_count": 9, "end": payload["start"], "slaves": ["nowhere"]},
        format="json",
    )
    assert response.status_code == 400
    assert set(response.json()["errors"]) == {
        "slaves[0]: no slave 'nowhere'",
        "end: must be after start",
        "gpu_count: those slaves have only 2 GPU(s) for jobs",
    }
    assert Reservation.objects.count() == 1
    # Growing A over a new reservation B (1 GPU, accepted) is refused as well.
    ok = client.post(PORTAL + "reservations", data={**payload, "gpu_count": 1}, format="json")
    assert ok.status_code == 201, ok.content
    grown = client.patch(
        PORTAL + f"reservations/{res_a.uuid}", data={"gpu_count": 2}, format="json"
    )
    assert grown.status_code == 400 and "'B'" in grown.json()["errors"][0]
    res_a.refresh_from_db()
    assert res_a.gpu_count == 1


def form_data(cluster, project, window, *, admin: bool, **extra):
    data = {
        "name": "B",
        "description": "",
        "cluster": str(cluster.pk),
        "gpu_count": "2",
        "projects": [str(project.pk)],
        **extra,
    }
    for name, moment in zip(("start", "end"), window, strict=True):
        if admin:  # the admin splits date and time
            data[name + "_0"], data[name + "_1"] = f"{moment:%Y-%m-%d}", f"{moment:%H:%M:%S}"
        else:
            data[name] = f"{moment:%Y-%m-%dT%H:%M}"
    return data


@pytest.mark.parametrize(
    "url", ["/reservations/new/", "/admin/reservations/reservation/add/"], ids=["form", "admin"]
)
def test_form_and_admin_refuse_overlap(res_a, admin_user, cluster, other_project, window, url):
    client = Client()
    client.force_login(admin_user)
    admin = "admin" in url
    response = client.post(url, form_data(cluster, other_project, window, admin=admin))
    assert response.status_code == 200  # the form again, with the error
    errors = (response.context["adminform"].form if admin else response.context["form"]).errors
    assert "'A'" in errors["gpu_count"][0]
    assert Reservation.objects.count() == 1
    # 1 GPU fits beside A: accepted.
    response = client.post(
        url, form_data(cluster, other_project, window, admin=admin, gpu_count="1")
    )
    assert response.status_code == 302
    assert Reservation.objects.count() == 2


@pytest.mark.parametrize("b_gpus", [1, 2])
def test_scheduler_starts_the_entitled_job_beside_the_valid_set(
    res_a, cluster, member, project, other_project, window, b_gpus
):
    """With the set validation accepts (B: 1 GPU), A's entitled job starts; the set it refuses
    (B: 2 GPUs, written past the rules as before) left the job queued beside an idle GPU."""
    from jobs.user_actions.services import job_submit

    if b_gpus == 1:
        b = reservation_create(
            name="B", cluster=cluster, start=window[0], end=window[1], gpu_count=1
        )
    else:
        b = Reservation.objects.create(
            name="B", cluster=cluster, start=window[0], end=window[1], gpu_count=2
        )
    b.projects.set([other_project])
    document = copy.deepcopy(HELLO_WORLD)
    document["request"]["scheduling"]["reservationIds"] = [str(res_a.uuid)]
    job = job_submit(user=member, project=project, document=document)
    snapshot, _ = build_snapshot(timezone.now())
    result = run_cycle(snapshot)
    started = [s.job_id for s in result.starts]
    assert started == ([str(job.uuid)] if b_gpus == 1 else [])
