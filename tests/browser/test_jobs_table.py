"""Item 3 of issue #16 in chromium: the jobs table sorts on the server by a header click, shows
25/50/100/200 rows, exit codes and queue places, and bulk-cancels a selection after a
confirmation that lists every job and the refusals."""

import re

import pytest
from playwright.sync_api import expect

from jobs.models import Job
from tests.browser.support import login, screenshot
from tests.web.factories import make_job

pytestmark = pytest.mark.browser


@pytest.fixture
def queued(portal, slave, settings):
    settings.PORTAL_TASK_MODE = "record"
    return portal


def uuids(page):
    return page.locator("tr[data-job]").evaluate_all("rows => rows.map(r => r.dataset.job)")


def test_sort_page_size_columns_and_bulk_cancel(queued, page, js_errors):
    user, project = queued.user, queued.project
    sweep = [
        make_job(owner=user, project=project, name=f"sweep-{i:02d}", gpus=i % 3) for i in range(30)
    ]
    failed = make_job(owner=user, project=project, name="sweep-failed", status="FAILED", slave=None)
    Job.objects.filter(pk=failed.pk).update(exit_code=137)

    login(page, queued)
    page.goto(queued.at("/jobs/"))
    expect(page.locator("tr[data-job]")).to_have_count(25)
    expect(page.locator(f'tr[data-job="{failed.uuid}"] [data-exit-code="137"]')).to_be_visible()
    queue = page.locator(f'tr[data-job="{sweep[-1].uuid}"] [data-queue-position]')
    expect(queue).to_have_text(re.compile(r"^#\d+$"))

    # Rows per page.
    page.select_option("#per-page", "50")
    page.click("form[role=search] button[type=submit]")
    expect(page.locator("tr[data-job]")).to_have_count(31)

    # Sort by a header click: GPUs descending first, then ascending.
    page.click('a[data-sort-key="gpus"]')
    expect(page).to_have_url(re.compile(r"sort=-gpus"))
    gpus = {str(j.uuid): j.gpus for j in Job.objects.all()}
    shown = [gpus[u] for u in uuids(page)]
    assert shown == sorted(shown, reverse=True) and len(shown) == 31  # page size kept
    page.click('a[data-sort-key="gpus"]')
    expect(page).to_have_url(re.compile(r"sort=gpus"))
    shown = [gpus[u] for u in uuids(page)]
    assert shown == sorted(shown)
    expect(page.locator('th[aria-sort="ascending"]')).to_contain_text("Resources")
    screenshot(page, "jobs-table-sorted")

    # Bulk cancel two queued jobs and the failed one: a confirmation lists all three.
    picked = [sweep[1], sweep[2], failed]
    for job in picked:
        page.check(f'tr[data-job="{job.uuid}"] input[name=jobs]')
    expect(page.locator("#bulk-count")).to_have_text("3 selected")
    page.select_option("#bulk-action", "cancel")
    page.click("#bulk-submit")
    confirm = page.locator("#bulk-confirm")
    expect(page.locator("#bulk-jobs tr[data-job]")).to_have_count(3)
    expect(page.locator(f'#bulk-jobs tr[data-job="{failed.uuid}"]')).to_have_attribute(
        "data-outcome", "refused"
    )
    expect(confirm).to_have_text("Cancel 2 jobs")
    screenshot(page, "jobs-bulk-confirm")
    assert Job.objects.get(pk=sweep[1].pk).status == "QUEUED"
    confirm.click()
    results = page.locator("#bulk-results")
    expect(results.locator("h1")).to_have_text("Cancel: 2 done, 1 refused")
    expect(results.locator(f'tr[data-job="{failed.uuid}"]')).to_contain_text("refused:")
    screenshot(page, "jobs-bulk-results")
    assert {j.status for j in Job.objects.filter(pk__in=[sweep[1].pk, sweep[2].pk])} == {
        "CANCELLED"
    }
    assert Job.objects.get(pk=failed.pk).status == "FAILED"

    # Back to the same list (sort and page size kept); row actions lead to the job's action.
    page.click("#bulk-back")
    expect(page).to_have_url(re.compile(r"sort=gpus"))
    row = page.locator(f'tr[data-job="{sweep[3].uuid}"]')
    expect(row.locator('[data-row-action="hold"]')).to_be_visible()
    row.locator('[data-row-action="hold"]').click()
    page.click("#confirm-hold")
    expect(page).to_have_url(re.compile(r"/jobs/\?.*sort=gpus"))  # back to the same list
    expect(page.locator(".alert-success")).to_contain_text("is on hold")
    expect(row).to_have_attribute("data-state", "ONHOLD")
    assert not js_errors
