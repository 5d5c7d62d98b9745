"""The usage reports over REST, as pages and as downloads: the numbers of a fixed month, who
sees which rows, the period in the viewer's zone, and the errors that name the parameter."""

import csv
import io
from datetime import timedelta

import pytest
from django.utils import timezone

from accounts.models import Profile
from reports.accounting import FIGURE_COLUMNS
from tests.reports.conftest import OCTOBER

USAGE = "/api/portal/reports/usage"
SIZES = "/api/portal/reports/sizes"


def report(client, user, query):
    client.force_login(user)
    response = client.get(f"{USAGE}?{query}")
    assert response.status_code == 200, response.content
    return response.json()


def rows_by(body, *columns):
    return {tuple(row[c] for c in columns): row for row in body["rows"]}


def test_a_member_sees_their_projects_total_with_runs_clipped_to_the_month(client, october, member):
    body = report(client, member, f"by=project&{OCTOBER}")
    rows = rows_by(body, "project")
    assert set(rows) == {("vision",)}  # not speech, which alice is not in
    vision = rows[("vision",)]
    # j1 2 GPUs x 2 h + j2 1 x 1 h + j3 4 x 2 h of its 4 h (it started on 30 September).
    assert vision["gpu_seconds"] == (4 + 1 + 8) * 3600
    assert vision["gpu_hours"] == 13.0
    assert vision["cpu_hours"] == 2 * (2 + 1 + 2)
    assert vision["mem_gb_hours"] == 4 * (2 + 1 + 2)
    assert vision["runs"] == 3
    assert (vision["jobs_finished"], vision["jobs_failed"]) == (1, 1)
    assert (vision["jobs_halted"], vision["jobs_cancelled"]) == (1, 1)
    assert vision["borrowed_gpu_hours"] == 0.0
    assert body["totals"]["gpu_seconds"] == vision["gpu_seconds"]
    assert body["columns"] == ["from", "to", "project", *FIGURE_COLUMNS]
    assert body["period"]["start"] == "2026-10-01T00:00:00Z"
    assert body["period"]["end"] == "2026-11-01T00:00:00Z"


@pytest.mark.parametrize(
    "who, expected",
    [
        ("member", {"alice": 5.0}),  # their own row only
        ("manager", {"alice": 5.0, "carol": 8.0}),  # a manager: their project's users
        ("admin_user", {"alice": 5.0, "carol": 8.0, "bob": 1.0}),  # everything
    ],
)
def test_per_user_rows_follow_who_may_see_them(client, october, request, who, expected):
    body = report(client, request.getfixturevalue(who), f"by=user&{OCTOBER}")
    assert {row["user"]: row["gpu_hours"] for row in body["rows"]} == expected
    assert body["totals"]["gpu_hours"] == sum(expected.values())


def test_waits_and_gpu_utilisation(client, october, member):
    body = report(client, member, f"by=member&{OCTOBER}")
    alice = rows_by(body, "project", "user")[("vision", "alice")]
    # Waits of the runs that started in October: j1 10 min, j2 1 h (nearest rank).
    assert (alice["wait_p50_s"], alice["wait_p90_s"]) == (600.0, 3600.0)
    assert (alice["gpu_util_percent"], alice["gpu_util_readings"]) == (75.0, 4)


def test_per_cluster_rows_and_jobs_that_never_ran(client, october, admin_user):
    body = report(client, admin_user, f"by=cluster&{OCTOBER}")
    rows = rows_by(body, "cluster")
    assert rows[("1",)]["gpu_hours"] == 14.0
    assert rows[("unplaced",)]["runs"] == 0
    assert rows[("unplaced",)]["jobs_cancelled"] == 1
    assert rows[("unplaced",)]["wait_p50_s"] is None


def test_sizes_by_project_and_gpu_count(client, october, admin_user):
    client.force_login(admin_user)
    body = client.get(f"{SIZES}?{OCTOBER}").json()
    cells = {(r["project"], r["gpus"]): (r["runs"], r["gpu_hours"]) for r in body["rows"]}
    assert cells == {
        ("speech", "1"): (1, 1.0),
        ("vision", "1"): (1, 1.0),
        ("vision", "2-3"): (1, 4.0),
        ("vision", "4-7"): (1, 8.0),
    }


def test_days_are_the_viewers(client, october, manager):
    Profile.objects.update_or_create(user=manager, defaults={"time_zone": "Europe/Brussels"})
    body = report(client, manager, f"by=project&{OCTOBER}")
    # 1 October begins at 22:00 UTC on 30 September in Brussels: j3's 4 hours all count.
    assert body["period"]["start"] == "2026-09-30T22:00:00Z"
    assert body["period"]["end"] == "2026-10-31T23:00:00Z"  # CET again since 25 October
    assert rows_by(body, "project")[("vision",)]["gpu_hours"] == 4 + 1 + 16


@pytest.mark.parametrize(
    "query, errors",
    [
        ("by=team", ["by: must be one of user, project, member, cluster"]),
        ("from=2026-10-40&to=2026-10-31", ["from: '2026-10-40' is not a date (YYYY-MM-DD)"]),
        ("from=2026-10-01", ["to: required with the other bound"]),
        ("from=2026-10-02&to=2026-10-01", ["to: must not be before from (2026-10-02)"]),
        (
            "from=2025-01-01&to=2026-10-31",
            ["to: a period lasts at most 366 days (this one 669)"],
        ),
        ("preset=yesterday", ["preset: must be one of this-month, last-month, last-30-days (got 'yesterday')"]),
        ("by=x&to=nope", ["by: must be one of user, project, member, cluster", "to: 'nope' is not a date (YYYY-MM-DD)"]),
    ],
)  # fmt: skip
def test_bad_parameters_are_named(client, member, query, errors):
    client.force_login(member)
    response = client.get(f"{USAGE}?{query}")
    assert response.status_code == 400
    assert response.json() == {"error": "invalid report request", "errors": errors}


def test_presets_and_the_default_period(client, member):
    client.force_login(member)
    today = timezone.localdate()
    first = today.replace(day=1)
    body = client.get(USAGE).json()
    assert body["period"]["from"] == f"{first:%Y-%m-%d}"  # this month
    previous = client.get(f"{USAGE}?preset=last-month").json()["period"]
    assert previous["to"] == f"{first - timedelta(days=1):%Y-%m-%d}"
    assert previous["from"].endswith("-01")
    last30 = client.get(f"{SIZES}?preset=last-30-days").json()["period"]
    assert last30["to"] == f"{today:%Y-%m-%d}"


def test_the_api_asks_for_a_sign_in(client):
    assert client.get(USAGE).status_code == 401


def test_csv_download_has_the_columns_and_a_totals_line(client, october, manager):
    client.force_login(manager)
    response = client.get(f"/reports/usage.csv?by=user&{OCTOBER}")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    assert "portal-usage-by-user-20261001-20261031.csv" in response["Content-Disposition"]
    lines = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert [line["user"] for line in lines] == ["alice", "carol", "total"]
    assert [float(line["gpu_seconds"]) for line in lines] == [5 * 3600, 8 * 3600, 13 * 3600]
    assert lines[0]["wait_p50_s"] == "600.0"
    assert lines[1]["wait_p50_s"] == ""  # carol's run started in September
    as_json = client.get(f"/reports/usage.json?by=user&{OCTOBER}").json()
    assert [row["gpu_seconds"] for row in as_json["rows"]] == [5 * 3600, 8 * 3600]
    sizes = client.get(f"/reports/sizes.csv?{OCTOBER}").content.decode().splitlines()
    assert sizes[0] == "from,to,project,gpus,runs,gpu_hours,gpu_seconds"
    assert len(sizes) == 4  # vision's three buckets: speech is not carol's


def test_the_page_shows_the_table_chart_and_downloads(client, october, manager):
    client.force_login(manager)
    response = client.get(f"/reports/?by=user&{OCTOBER}")
    assert response.status_code == 200
    html = response.content.decode()
    assert 'id="usage-table"' in html and 'id="sizes-table"' in html
    assert 'id="report-chart-data"' in html and "vendor/chartjs/chart.umd.min.js" in html
    assert f"/reports/usage.csv?by=user&amp;{OCTOBER.replace('&', '&amp;')}" in html
    assert ">alice</th>" in html and ">carol</th>" in html and ">bob</th>" not in html
    assert 'nav-link active" href="/reports/"' in html
    refused = client.get("/reports/?from=2026-10-02&to=2026-10-01")
    assert refused.status_code == 400
    assert "to: must not be before from (2026-10-02)" in refused.content.decode()


def test_a_member_sees_their_projects_per_cluster_only(client, october, member):
    body = report(client, member, f"by=cluster&{OCTOBER}")
    rows = rows_by(body, "cluster")
    assert rows[("1",)]["gpu_hours"] == 13.0  # vision's runs; bob's hour in speech is not theirs
    assert rows[("unplaced",)]["jobs_cancelled"] == 1


def test_borrowed_runs_count_apart(client, october, member):
    from jobs.models import Job

    Job.objects.filter(pk=october["j1"].pk).update(borrowed=True)
    body = report(client, member, f"by=user&{OCTOBER}")
    alice = rows_by(body, "user")[("alice",)]
    assert (alice["gpu_hours"], alice["borrowed_gpu_hours"]) == (5.0, 4.0)
    assert alice["borrowed_gpu_seconds"] == 4 * 3600
