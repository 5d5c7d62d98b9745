"""The Usage page's numbers agree with each other (issue #16 item 9): the chart's GPU-hours, the
fair-share figure and its bars. Before, the chart said 0.1 GPU-hours while the fair share said
0.0 h (the value of the last tick, without the running job) drawn as a third-full bar."""

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from jobs.models import Job, UserUsage
from jobs.scheduler_bridge.snapshot import running_rows, scheduler_config
from jobs.scheduler_bridge.usage import usage_accrue
from tests.web.factories import make_job

SHARE_ROW = re.compile(
    r'<div class="share-row( me)?" data-hours="([\d.]+)" data-percent="([\d.]+)">\s*'
    r"<span>([^<]+)</span>\s*"
    r'<div class="meter" role="img" aria-label="([\d.]+) weighted GPU-hours">'
    r'<div style="width: ([\d.]+)%"></div></div>\s*'
    r'<span class="text-end">([\d.]+) h</span>'
)


def share_rows(html: str) -> list[dict]:
    rows = []
    for me, hours, percent, label, aria, width, shown in SHARE_ROW.findall(html):
        # The number printed, the bar's label and the data attribute are one number.
        assert hours == aria == shown, (hours, aria, shown)
        assert percent == width
        rows.append({"me": bool(me), "label": label, "hours": float(hours), "width": float(width)})
    assert rows, "no fair-share rows on the page"
    return rows


def assert_bars_match_numbers(rows: list[dict]) -> None:
    peak = max(r["hours"] for r in rows)
    for row in rows:
        expected = 100 * row["hours"] / peak if peak else 0.0
        assert abs(row["width"] - expected) <= 0.06, (row, peak)
    widths = [r["width"] for r in rows]
    assert widths == sorted(widths, reverse=True)  # drawn in the order of the numbers


def series_total(html: str, label: str) -> float:
    section = html[html.index(f'data-series="{label}"') :]
    return float(re.search(r'<strong class="series-total">([\d.]+)</strong>', section).group(1))


def day_values(html: str, label: str) -> list[float]:
    section = html[html.index(f'data-series="{label}"') :]
    section = section[: section.index("</details>")]
    return [float(v) for v in re.findall(r"<td>\d{4}-\d\d-\d\d</td><td>([\d.]+)</td>", section)]


@pytest.fixture
def plain_weights(settings):
    """GPUs only, and a decay too slow to show: fair share = GPU-hours, so they can be compared."""
    settings.PORTAL_USAGE_WEIGHTS = {"gpu": 1.0, "cpu": 0.0, "mem_gb": 0.0}
    settings.PORTAL_USAGE_HALF_LIFE_S = 100 * 365 * 86400


def tick(now):
    usage_accrue(now=now, running=running_rows(), config=scheduler_config())


def test_chart_and_fair_share_agree_with_a_job_running_since_the_last_tick(
    plain_weights, member_client, member, project, slave
):
    now = timezone.now()
    # Yesterday: 2 GPUs for 3 hours, accrued by the scheduler's ticks while it ran.
    start = now - timedelta(days=1, hours=4)
    done = make_job(
        owner=member, project=project, status="RUNNING", slave=slave, gpus=2, started=start
    )
    tick(start)
    tick(start + timedelta(hours=3))
    Job.objects.filter(pk=done.pk).update(
        status="FINISHED", ended_at=start + timedelta(hours=3), status_updated=now
    )
    # Running for 30 minutes with 1 GPU; no tick since it started.
    make_job(
        owner=member,
        project=project,
        status="RUNNING",
        slave=slave,
        gpus=1,
        started=now - timedelta(minutes=30),
    )
    assert UserUsage.objects.get(user=member).value == pytest.approx(6 * 3600, rel=1e-4)

    html = member_client.get("/usage/").content.decode()
    chart = series_total(html, "Me")
    assert chart == pytest.approx(6.5, abs=0.01)
    assert sum(day_values(html, "Me")) == pytest.approx(chart, abs=0.011)
    rows = share_rows(html)
    me = next(r for r in rows if r["me"])
    # Without the running job the fair share said 6.00 while the chart said 6.50.
    assert me["hours"] == pytest.approx(chart, abs=0.01)
    assert me["width"] == 100.0
    assert_bars_match_numbers(rows)


def test_tiny_usage_is_printed_and_drawn_alike(member_client, member, outsider, admin_user):
    now = timezone.now()
    UserUsage.objects.create(user=member, value=10, updated_at=now)  # 0.003 h: prints 0.00
    UserUsage.objects.create(user=outsider, value=0, updated_at=now)
    rows = share_rows(member_client.get("/usage/").content.decode())
    assert [(r["label"], r["hours"], r["width"]) for r in rows] == [
        ("you", 0.0, 0.0),
        ("user 1", 0.0, 0.0),
    ]

    UserUsage.objects.filter(user=member).update(value=36)  # 0.01 h
    UserUsage.objects.filter(user=outsider).update(value=108)  # 0.03 h
    UserUsage.objects.create(user=admin_user, value=5 * 3600, updated_at=now)
    html = member_client.get("/usage/").content.decode()
    rows = share_rows(html)
    assert [(r["label"], r["hours"]) for r in rows] == [
        ("user 1", 5.0),
        ("user 2", 0.03),
        ("you", 0.01),
    ]
    assert_bars_match_numbers(rows)
    assert 'id="fair-rank">#1<' in html  # rank 1: the least used, whose jobs start first


def test_fair_share_decays_to_the_moment_of_the_page(member_client, member, settings):
    settings.PORTAL_USAGE_HALF_LIFE_S = 86400
    UserUsage.objects.create(
        user=member, value=4 * 3600, updated_at=timezone.now() - timedelta(days=1)
    )
    rows = share_rows(member_client.get("/usage/").content.decode())
    assert [(r["label"], r["hours"]) for r in rows] == [("you", 2.0)]
