"""The Reports page in a browser: the chart draws the table's numbers, the form and the presets
change the period and the rows, the CSV downloads, and no script fails."""

from datetime import UTC, datetime

import pytest
from playwright.sync_api import expect

from tests.browser.support import login, screenshot
from tests.web.factories import make_job

pytestmark = pytest.mark.browser


def utc(day, hour):
    return datetime(2025, 6, day, hour, tzinfo=UTC)


def test_reports_chart_table_period_and_download(portal, slave, page, js_errors):
    user, project = portal.user, portal.project
    for gpus, day in ((2, 5), (1, 6)):
        make_job(
            owner=user, project=project, status="FINISHED", slave=slave, gpus=gpus,
            created=utc(day, 9), started=utc(day, 10), ended=utc(day, 13),
        )  # fmt: skip
    login(page, portal)
    page.click("nav >> text=Reports")
    expect(page).to_have_url(portal.at("/reports/"))

    page.fill("#report-from", "2025-06-01")
    page.fill("#report-to", "2025-06-30")
    page.select_option("#report-by", "member")
    page.click("#report-form button[type=submit]")
    expect(page.locator("#report-chart")).to_have_attribute("data-drawn", "1")
    expect(page.locator("#report-period")).to_contain_text("2025-06-01 to 2025-06-30")
    # 2 GPUs x 3 h + 1 GPU x 3 h: the chart draws the number the table prints.
    row = page.locator("#usage-table tbody tr").first
    expect(row.locator("th").nth(0)).to_have_text(project.name)
    expect(row.locator("th").nth(1)).to_have_text(user.username)
    expect(row.locator("[data-col=gpu_hours]")).to_have_text("9.00")
    assert page.evaluate("Chart.getChart('report-chart').data.datasets[0].data") == [9.0]
    expect(page.locator("#sizes-table tbody tr th")).to_have_text(project.name)
    screenshot(page, "reports")

    with page.expect_download() as download:
        page.click("#download-usage-csv")
    assert download.value.suggested_filename == "portal-usage-by-member-20250601-20250630.csv"
    content = open(download.value.path(), encoding="utf-8").read().splitlines()
    assert content[0].startswith("from,to,project,user,runs,gpu_hours")
    assert content[1].startswith(f"2025-06-01,2025-06-30,{project.name},{user.username},2,9.0,")

    page.click("text=Last 30 days")
    expect(page.locator("#report-period")).to_contain_text("(30 days")
    expect(page.locator("#usage-table tbody")).to_contain_text("Nothing ran in this period.")
    assert js_errors == []
