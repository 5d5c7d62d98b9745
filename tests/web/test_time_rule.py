"""The one time rule: every time in the user's zone, labelled, 24-hour ISO style; the zone is
a profile setting (the browser's, saved once by JS), activated per request for pages and admin."""

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from django.utils import timezone

from accounts.models import Profile
from accounts.timezones import profile_set_time_zone
from core.templatetags.portal_ui import relative_text, usertime, zoned_explanation
from reservations.forms import ReservationForm, default_window
from reservations.models import Reservation

BRUSSELS = "Europe/Brussels"


def test_usertime_shows_the_active_zone_labelled_with_the_absolute_time_on_hover():
    with timezone.override(ZoneInfo(BRUSSELS)):
        html = usertime("2030-01-02T03:04:05Z")
        summer = usertime(datetime(2030, 7, 1, 12, 0, tzinfo=UTC), "time")
    assert html == (
        '<time datetime="2030-01-02T03:04:05Z" title="2030-01-02 04:04:05 CET" '
        'data-style="datetime">2030-01-02 04:04 CET</time>'
    )
    assert ">14:00 CEST</time>" in summer


def test_relative_times_say_in_and_ago():
    now = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
    assert relative_text(now + timedelta(hours=3), now) == "in 3 h"
    assert relative_text(now - timedelta(minutes=12), now) == "12 min ago"
    assert relative_text(now - timedelta(seconds=5), now) == "a few seconds ago"
    assert relative_text(now + timedelta(days=3), now) == "in 3 days"
    with timezone.override(ZoneInfo(BRUSSELS)):
        html = usertime(timezone.now() - timedelta(minutes=12), "relative")
    title = html.split('title="')[1].split('"')[0]
    assert ">12 min ago</time>" in html and title.endswith((" CET", " CEST"))


def test_explanations_show_their_utc_times_in_the_users_zone():
    line = "reservation R blocks gpu1-gpu4 from 2030-01-05 14:00 UTC <b>"
    with timezone.override(ZoneInfo(BRUSSELS)):
        html = str(zoned_explanation(line))
    assert ">2030-01-05 15:00 CET</time>" in html
    assert 'datetime="2030-01-05T14:00:00Z"' in html
    assert "&lt;b&gt;" in html and "UTC" not in html.replace("datetime=", "")


def test_profile_zone_is_validated_and_activated_for_pages_and_admin(
    member, member_client, admin_user, client_of
):
    with pytest.raises(ValueError, match="time_zone: unknown time zone"):
        profile_set_time_zone(user=member, zone="Mars/Olympus")
    bad = member_client.post("/profile/time-zone/", {"time_zone": "Nowhere", "detected": "1"})
    assert bad.status_code == 400 and "time_zone" in bad.json()["errors"][0]
    # Detected once by the browser: saved when none is, ignored afterwards.
    answer = member_client.post("/profile/time-zone/", {"time_zone": BRUSSELS, "detected": "1"})
    assert answer.json() == {"ok": True, "zone": BRUSSELS, "saved": True}
    answer = member_client.post("/profile/time-zone/", {"time_zone": "Asia/Tokyo", "detected": "1"})
    assert answer.json()["saved"] is False
    assert Profile.objects.get(user=member).time_zone == BRUSSELS
    # Chosen on the profile page.
    member_client.post("/profile/time-zone/", {"time_zone": "Asia/Tokyo"})
    assert Profile.objects.get(user=member).time_zone == "Asia/Tokyo"
    html = member_client.get("/profile/").content.decode()
    assert 'id="nav-zone"' in html and "Asia/Tokyo</a>" in html and "JST" in html

    profile_set_time_zone(user=admin_user, zone=BRUSSELS)
    admin = client_of(admin_user)
    html = admin.get(f"/admin/auth/user/{member.pk}/change/").content.decode()
    joined = timezone.localtime(member.date_joined, ZoneInfo(BRUSSELS))
    assert joined.strftime("%Y-%m-%d") in html
    html = admin.get("/admin/auth/user/").content.decode()
    assert "a.m." not in html and "p.m." not in html


def test_reservation_form_defaults_and_parses_in_the_users_zone(admin_user, client_of, slave):
    profile_set_time_zone(user=admin_user, zone=BRUSSELS)
    client = client_of(admin_user)
    html = client.get("/reservations/new/").content.decode()
    assert "Start (Europe/Brussels)" in html and 'type="datetime-local"' not in html
    start, end = default_window(timezone.localtime(timezone.now(), ZoneInfo(BRUSSELS)))
    assert start.minute == 0 and end - start == timedelta(hours=1)
    assert f'value="{start:%Y-%m-%d %H:%M}"' in html and f'value="{end:%Y-%m-%d %H:%M}"' in html

    answer = client.post(
        "/reservations/new/",
        {
            "name": "zone test",
            "cluster": slave.cluster_id,
            "start": "2031-01-10 09:00",
            "end": "2031-01-10 10:00",
            "gpu_count": 1,
        },
    )
    assert answer.status_code == 302
    r = Reservation.objects.get(name="zone test")
    assert r.start == datetime(2031, 1, 10, 8, 0, tzinfo=UTC)  # 09:00 CET
    with timezone.override(ZoneInfo(BRUSSELS)):
        form = ReservationForm(instance=r)
        assert form["start"].value().strftime("%H:%M") == "09:00"


def test_usertime_seconds_style_shows_a_utc_z_string_in_the_viewer_zone():
    """Gang attempts, outputs and Tapis stages hold UTC strings ("…Z"): shown zoned, to the second."""
    from django.template import Context, Template
    from django.utils import timezone as django_timezone

    with django_timezone.override("Asia/Kolkata"):
        html = Template('{% load portal_ui %}{% usertime t "seconds" %}').render(
            Context({"t": "2026-11-25T20:48:19.846Z"})
        )
    assert ">2026-11-26 02:18:19 IST</time>" in html, html
    assert 'datetime="2026-11-25T20:48:19Z"' in html
