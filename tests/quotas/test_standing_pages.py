"""The standing on the pages (issue 29 item 3): the dashboard's "Your limits this month" card
and Create Job's standing box (filled by static/js/standing.js; tests/browser/
test_quota_standing.py drives it), times in the viewer's zone."""

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from accounts.timezones import profile_set_time_zone
from jobs.models import Job, StartEstimate
from jobs.web.dashboard import limit_bars
from quotas.models import Quota
from quotas.selectors import month_end
from tests.web.factories import make_job

pytestmark = pytest.mark.django_db


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _level(hard=None, soft=None, **counted):
    return {"hard": hard, "soft": soft, **counted}


def _row(**levels):
    row = {
        "scope": "project",
        "project": "vision",
        "user": None,
        "gpus": _level(held=0),
        "jobs": _level(running=0),
        "gpu_hours": _level(used=0.0, running_may_use=0.0),
        "cpu_hours": _level(used=0.0, running_may_use=0.0),
        "mem_gb_hours": _level(used=0.0, running_may_use=0.0),
    }
    row.update(levels)
    return row


def test_limit_bars_draw_each_set_limit_against_its_hard_level_with_the_soft_marked():
    bars = limit_bars(
        _row(
            gpus=_level(hard=4, held=4),
            gpu_hours=_level(hard=100, soft=80, used=90.0, running_may_use=6.0),
            cpu_hours=_level(soft=50, used=10.0, running_may_use=0.0),
        )
    )
    by_name = {bar["name"]: bar for bar in bars}
    assert list(by_name) == ["gpus", "gpu_hours", "cpu_hours"]  # jobs and memory: no limit
    assert (by_name["gpus"]["state"], by_name["gpus"]["percent"]) == ("over", 100.0)
    assert by_name["gpus"]["text"] == "4 held of 4"
    hours = by_name["gpu_hours"]
    assert (hours["state"], hours["percent"], hours["soft_percent"]) == ("soft", 90.0, 80.0)
    assert hours["text"] == "90 h used of 100 (soft 80)" and hours["running_may_use"] == "6"
    # Only a soft level: drawn against it, within it.
    cpu = by_name["cpu_hours"]
    assert (cpu["state"], cpu["percent"], cpu["soft_percent"]) == ("ok", 20.0, 100.0)


def test_dashboard_card_shows_the_viewers_limits_this_month_in_their_zone(member, project, slave):
    Quota.objects.create(project=project, gpu_hours_hard=10, gpu_hours_soft=8)
    Quota.objects.create(user=member, gpus_hard=2)
    now = timezone.now()
    started = max(
        now.replace(day=1, hour=0, minute=0, second=0, microsecond=0), now - timedelta(hours=3)
    )
    make_job(
        owner=member, project=project, status="FINISHED", slave=slave, gpus=2,
        started=started, ended=started + timedelta(hours=1),
    )  # fmt: skip
    profile_set_time_zone(user=member, zone="Europe/Brussels")
    page = _client(member).get("/").content.decode()
    assert 'id="limits-card"' in page and "Your limits this month" in page
    card = page.split('id="limits-card"')[1].split("</section>")[0]
    # The viewer's own limits first, then the project's.
    assert card.index("You (alice), in every project") < card.index("Project vision")
    assert 'data-limit="gpus" data-state="ok"' in card and "0 held of 2" in card
    assert "2 h used of 10 (soft 8)" in card and 'style="width: 20.0%"' in card
    renews = month_end(now).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert f'<time datetime="{renews}"' in card
    assert " CET</time>" in card or " CEST</time>" in card


def test_dashboard_has_no_card_without_limits(member, project):
    page = _client(member).get("/").content.decode()
    assert "Fair share" in page and 'id="limits-card"' not in page


def test_create_job_shows_the_standing_box_fed_by_the_standing_endpoint(member, project):
    Quota.objects.create(project=project, gpus_hard=1)
    page = _client(member).get("/jobs/new/").content.decode()
    assert 'id="quota-standing" data-url="/api/portal/quotas/standing"' in page
    assert 'id="standing-fit"' in page and "js/standing.js" in page
    renews = month_end(timezone.now()).strftime("%Y-%m-%dT%H:%M:%SZ")
    box = page.split('id="quota-standing"')[1].split("</section>")[0]
    assert f'<time datetime="{renews}"' in box


def test_job_page_of_a_quota_held_job_gives_the_quotas_line_and_a_shape_within_it(
    member, project, slave, submit, hello_world
):
    """A running job may use 7 of the project's 10 GPU-hours: a queued 8-hour 1-GPU job waits
    with the budget's line, and the advice is a maxDuration that fits what is left."""
    Quota.objects.create(project=project, gpu_hours_hard=10)
    hello_world["request"]["resources"].update(gpus=1, cpus=1)
    hello_world["request"]["scheduling"]["maxDuration"] = "7 hours"
    holder = submit(hello_world)
    Job.objects.filter(pk=holder.pk).update(
        status="RUNNING", slave=slave, gpu_ids=[0], cpu_ids=[0], started_at=timezone.now()
    )
    hello_world["request"]["scheduling"]["maxDuration"] = "8 hours"
    waiting = submit(hello_world)
    page = _client(member).get(f"/jobs/{waiting.uuid}/").content.decode()
    held = page.split('id="estimate-quota"')[1].split("</p>")[0]
    assert "Held back by a limit: project vision has used 0" in held
    assert "its running jobs may use 7 more; this job may run up to 8 h on 1 GPU" in held
    row = StartEstimate.objects.get(job=waiting)
    (advice,) = [a for a in row.advice if a["kind"] == "max_duration"]
    assert advice["change"].endswith(
        "instead of 8 hours (fits the GPU-hours budget of project vision)"
    )
    assert 2 * 3600 <= advice["value"] <= 3 * 3600  # what is left, rounded down to hours
    assert 'id="estimate-advice"' in page and "fits the GPU-hours budget" in page
