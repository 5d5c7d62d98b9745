"""Pages without a Docker engine (jobs stay queued: tasks are only recorded): every page of the
navigation renders, the portal works without JavaScript, and fits a 390 px wide phone."""

import json
import re

import pytest
from playwright.sync_api import expect

from jobs.models import Job
from tests.browser.support import login, screenshot, submit_job

pytestmark = pytest.mark.browser

JOB_URL = re.compile(r"/jobs/[0-9a-f-]{36}/$")
PHONE = {"width": 390, "height": 844}
OVERFLOW_TOLERANCE = 2  # px


@pytest.fixture
def queued(portal, slave, settings):
    """The fake online slave of tests/conftest.py (4 GPUs, cluster 1); nothing is launched."""
    settings.PORTAL_TASK_MODE = "record"
    return portal


def test_every_page_of_the_navigation_renders(queued, page, js_errors):
    job = submit_job(queued, "sleep 300", name="waiting-job")
    login(page, queued)
    pages = [
        ("/", "Dashboard", "dashboard"),
        ("/jobs/", "Jobs", None),
        (f"/jobs/{job.uuid}/", "waiting-job", None),
        ("/live/clusters/", "Live", None),
        ("/live/slaves/", "Live", None),
        ("/reservations/", "Reservations", "reservations"),
        ("/usage/", "Usage", "usage"),
        ("/profile/", "Profile", None),
    ]
    for path, heading, name in pages:
        response = page.goto(queued.at(path))
        assert response.status == 200, (path, response.status)
        expect(page.locator("h1")).to_have_text(heading)
        if path == "/jobs/":
            expect(page.locator(f'tr[data-job="{job.uuid}"]')).to_have_attribute(
                "data-state", "QUEUED"
            )
        elif path == "/live/slaves/":
            expect(page.locator('tr[data-slave="gpu1"]')).to_have_attribute("data-online", "1")
            expect(page.locator('[data-gpu][data-state="free"]')).to_have_count(4)
        if name:
            screenshot(page, name)

    # Profile: create the API token, then rotate it through the confirmation dialog.
    page.click("#token-rotate")
    expect(page.locator(".alert-success")).to_have_text(re.compile("API token created"))
    first = page.locator("#token-value").input_value()
    page.click("#token-rotate")
    expect(page.locator("#confirm-modal")).to_be_visible()
    page.click("#confirm-token-rotate")
    expect(page.locator(".alert-success")).to_contain_text("the old one no longer works")
    assert page.locator("#token-value").input_value() != first
    screenshot(page, "profile")
    assert not js_errors


def test_without_javascript_list_job_page_and_create_job_work(queued, page_of, js_errors):
    page = page_of(java_script_enabled=False)
    login(page, queued)

    page.goto(queued.at("/jobs/new/"))
    expect(page.locator("#apply-fields")).to_be_visible()  # the editor script did not run
    expect(page.locator("#job-validate")).to_be_hidden()
    document = {
        "name": "no-script-job",
        "request": {
            "resources": {"clusterId": 1, "gpus": 1, "cpus": 1, "cpuMemoryGb": 1},
            "docker": {"image": "gpuportal/busybox:latest", "command": "sleep 300"},
        },
    }
    page.fill("#id_document", json.dumps(document, indent=2))
    page.click("#job-submit")
    expect(page).to_have_url(JOB_URL)
    expect(page.locator(".alert-success")).to_contain_text("Job no-script-job submitted")
    expect(page.locator("#job-name")).to_have_text("no-script-job")
    expect(page.locator("#job-status")).to_have_attribute("data-state", "QUEUED")
    job = Job.objects.get(name="no-script-job")
    assert job.owner == queued.user and job.project == queued.project and job.gpus == 1

    page.goto(queued.at("/jobs/"))
    row = page.locator(f'tr[data-job="{job.uuid}"]')
    expect(row).to_have_attribute("data-state", "QUEUED")
    expect(row).to_have_attribute("data-full", "1")
    expect(row.locator("a.job-name")).to_have_text("no-script-job")

    # An action without JavaScript asks on a confirmation page.
    row.locator("a.job-name").click()
    expect(page).to_have_url(JOB_URL)
    page.click("#action-cancel")
    expect(page).to_have_url(re.compile(r"/cancel/$"))
    page.click("#confirm-cancel")
    expect(page).to_have_url(JOB_URL)
    expect(page.locator("#job-status")).to_have_attribute("data-state", "CANCELLED")
    job.refresh_from_db()
    assert job.status == "CANCELLED"
    assert not js_errors


def scroll_width(page) -> int:
    return page.evaluate("document.scrollingElement.scrollWidth")


def test_navigation_and_job_list_fit_a_phone(queued, page_of, js_errors):
    for index in range(3):
        submit_job(queued, "sleep 300", name=f"phone-job-{index}-with-a-rather-long-name")
    page = page_of(viewport=PHONE)
    login(page, queued)

    page.goto(queued.at("/jobs/"))
    expect(page.locator("tr[data-job]")).to_have_count(3)
    nav = page.get_by_role("navigation", name="Main")
    for link in ("Jobs", "Create Job", "Reservations", "Usage"):
        expect(nav.get_by_role("link", name=link, exact=True)).to_be_visible()
    live_menu = nav.get_by_role("button", name="Live")  # a dropdown toggle
    expect(live_menu).to_be_visible()
    expect(page.locator("#nav-user")).to_be_visible()
    for element in (nav, page.locator("#job-table")):
        box = element.bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"] + OVERFLOW_TOLERANCE
    assert scroll_width(page) <= PHONE["width"] + OVERFLOW_TOLERANCE
    screenshot(page, "jobs-list-390px")

    # The Live dropdown opens within the screen.
    live_menu.click()
    slaves_link = nav.get_by_role("link", name="Slaves")
    expect(slaves_link).to_be_visible()
    box = slaves_link.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"] + OVERFLOW_TOLERANCE
    slaves_link.click()
    expect(page).to_have_url(re.compile(r"/live/slaves/$"))
    assert scroll_width(page) <= PHONE["width"] + OVERFLOW_TOLERANCE
    assert not js_errors
