"""Admin pages in the viewer's zone with the zone's name (issue 28 item 2, the admin's part):
a list and two change pages of a Brussels admin show CET times, none in UTC."""

import re
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from accounts.timezones import profile_set_time_zone
from reservations.models import Reservation
from tests.web.factories import make_job

pytestmark = pytest.mark.django_db

BRUSSELS = ZoneInfo("Europe/Brussels")
TAG = re.compile(r"<[^>]*>")
WINTER = datetime(2026, 11, 25, 20, 43, 0, tzinfo=ZoneInfo("UTC"))


@pytest.fixture
def brussels_admin(admin_user, client_of):
    profile_set_time_zone(user=admin_user, zone="Europe/Brussels")
    return client_of(admin_user)


def test_admin_job_list_and_change_page_in_the_viewers_zone(brussels_admin, member, project, slave):
    job = make_job(
        owner=member, project=project, status="FINISHED", slave=slave, created=WINTER,
        started=WINTER + timedelta(minutes=1), ended=WINTER + timedelta(minutes=6),
    )  # fmt: skip
    listing = brussels_admin.get("/admin/jobs/job/").content.decode()
    assert "2026-11-25 21:43 CET" in listing, "created, in Brussels with its zone's name"
    assert "20:43" not in listing
    change = brussels_admin.get(f"/admin/jobs/job/{job.pk}/change/").content.decode()
    assert "21:44" in change and "CET" in change
    # What is read: a <time datetime=...> keeps UTC for scripts.
    change = " ".join(TAG.sub(" ", change).split())
    assert "created: 2026-11-25 21:43:00 CET" in change
    found = re.search(r".{200}20:4[34].{80}", change, re.S)
    assert not found, found.group(0)


def test_admin_reservation_change_page_names_the_zone_of_its_inputs(brussels_admin, slave):
    r = Reservation.objects.create(
        name="workshop", cluster=slave.cluster, start=WINTER, end=WINTER + timedelta(hours=2)
    )
    change = brussels_admin.get(f"/admin/reservations/reservation/{r.pk}/change/").content.decode()
    assert 'value="21:43:00"' in change or 'value="21:43"' in change, "the input in Brussels"
    # The inputs' zone, named on the page (Django's split inputs carry none).
    assert re.search(r'id="admin-zone"[^>]*> · times in Europe/Brussels \(CET\)<', change)
    listing = brussels_admin.get("/admin/reservations/reservation/").content.decode()
    assert "2026-11-25 21:43 CET" in listing
