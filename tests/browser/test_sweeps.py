"""Issue #28 item 1 in chromium: a sweep made on Create Job (the job as a template, a grid of
two parameters of two values), previewed as 4 jobs, submitted as one array, shown as one group
in the jobs list that opens to its 4 jobs, and cancelled as a whole; and a sweep document
pasted into the editor (refused before: "must contain request")."""

import json
import re

import pytest
from playwright.sync_api import expect

from jobs.models import Job
from tests.browser.support import fill_editor, login, screenshot
from tests.browser.test_every_page import AXE, AXE_RUN, AXE_TAGS

pytestmark = pytest.mark.browser

GRID = "request.docker.environment.LR = 0.1, 0.01\nrequest.docker.environment.BATCH = 32, 64"


def assert_accessible(page) -> None:
    """axe-core (WCAG 2.1 A and AA) finds nothing on the page as it is now, light and dark."""
    page.add_script_tag(path=str(AXE))
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        page.wait_for_timeout(300)  # Bootstrap's colour transitions (0.15 s) to end
        violations = page.evaluate(AXE_RUN, AXE_TAGS)
        assert not violations, f"{scheme}: {json.dumps(violations, indent=1)}"
    page.emulate_media(color_scheme="light")


@pytest.fixture
def queued(portal, slave, settings):
    settings.PORTAL_TASK_MODE = "record"  # the jobs stay queued
    return portal


def test_grid_sweep_preview_submit_group_and_cancel(queued, page, js_errors):
    login(page, queued)
    page.goto(queued.at("/jobs/new/"))
    expect(page.locator("#sweep-grid-box")).to_be_hidden()
    page.check("#sweep-mode-grid")
    expect(page.locator("#sweep-grid-box")).to_be_visible()
    page.fill("#sweep-grid", GRID)
    # The preview follows the typing: 4 jobs, each with its own values.
    expect(page.locator("#sweep-count")).to_contain_text("4 jobs")
    table = page.locator("#sweep-preview-jobs")
    expect(table.locator("tbody tr")).to_have_count(4)
    expect(table.locator("thead")).to_contain_text("request.docker.environment.LR")
    expect(table.locator('tr[data-sweep-job="3"]')).to_contain_text("0.01")
    expect(table.locator('tr[data-sweep-job="3"]')).to_contain_text("64")
    expect(page.locator("#job-submit")).to_have_text("Submit 4 jobs")
    assert not Job.objects.exists()  # a preview submits nothing
    screenshot(page, "sweep-preview")
    assert_accessible(page)
    page.set_viewport_size({"width": 390, "height": 844})  # a phone: nothing wider than it
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    assert_accessible(page)
    page.set_viewport_size({"width": 1280, "height": 900})

    page.click("#job-submit")
    expect(page).to_have_url(re.compile(r"/jobs/\?sweep=[0-9a-f-]{36}$"))
    expect(page.locator("#sweep-banner-counts")).to_have_text("4 jobs, 4 queued")
    expect(page.locator("tr[data-job]")).to_have_count(4)
    jobs = list(Job.objects.order_by("id"))
    assert len(jobs) == 4 and len({job.array_id for job in jobs}) == 1
    assert [job.request["docker"]["environment"] for job in jobs] == [
        {"LR": "0.1", "BATCH": 32},
        {"LR": "0.1", "BATCH": 64},
        {"LR": "0.01", "BATCH": 32},
        {"LR": "0.01", "BATCH": 64},
    ]

    # The whole list: one group row, which opens to its 4 jobs.
    page.goto(queued.at("/jobs/"))
    group = page.locator("tr.sweep-group")
    expect(group).to_have_count(1)
    expect(page.locator("tr[data-job]")).to_have_count(0)
    expect(group.locator(".sweep-counts")).to_have_text("Sweep of 4 jobs: 4 queued")
    group.locator("[data-sweep-toggle]").click()
    expect(page.locator("tr.sweep-child[data-job]")).to_have_count(4)
    expect(group.locator("[data-sweep-toggle]")).to_have_attribute("aria-expanded", "true")
    screenshot(page, "sweep-group-open")
    assert_accessible(page)

    # Cancel the group: one confirmation listing its 4 jobs, then all 4 cancelled.
    group.locator('[data-sweep-action="cancel"]').click()
    expect(page.locator("#bulk-jobs tr[data-job]")).to_have_count(4)
    expect(page.locator("#bulk-confirm")).to_have_text("Cancel 4 jobs")
    assert_accessible(page)
    assert set(Job.objects.values_list("status", flat=True)) == {"QUEUED"}
    page.click("#bulk-confirm")
    expect(page.locator("#bulk-results h1")).to_have_text("Cancel: 4 done")
    assert set(Job.objects.values_list("status", flat=True)) == {"CANCELLED"}
    page.click("#bulk-back")
    expect(page.locator("tr.sweep-group .sweep-counts")).to_have_text(
        "Sweep of 4 jobs: 4 cancelled"
    )
    assert not js_errors


def test_a_pasted_sweep_document_is_checked_and_submitted(queued, page, js_errors):
    login(page, queued)
    page.goto(queued.at("/jobs/new/"))
    template = json.loads(page.locator("#id_document").input_value())
    body = {
        "template": {**template, "name": "pasted-${index}"},
        "variations": [{"description": "one"}, {"description": "two"}],
    }
    fill_editor(page, json.dumps(body, indent=2))
    status = page.locator("#editor-status")
    expect(status).to_have_text("A sweep of 2 jobs: submitted as one array.")  # as pasted
    page.click("#job-validate")
    expect(status).to_have_text("A sweep of 2 jobs: submitted as one array.")
    expect(page.locator("#job-json-errors")).to_be_hidden()
    # Previewed as a sweep made in the section is.
    expect(page.locator("#sweep-count")).to_contain_text("2 jobs")
    expect(page.locator('#sweep-preview-jobs tr[data-sweep-job="1"]')).to_contain_text("two")
    expect(page.locator("#job-submit")).to_have_text("Submit 2 jobs")
    page.click("#job-submit")
    expect(page).to_have_url(re.compile(r"/jobs/\?sweep="))
    expect(page.locator("tr[data-job]")).to_have_count(2)
    assert sorted(Job.objects.values_list("name", flat=True)) == ["pasted-0", "pasted-1"]
    assert not js_errors
