"""Items 1 and 2 of issue #16 in chromium: the user's zone is detected once, shown in the header
and used for every time; the dashboard, Live > Clusters and the job page update themselves, and
a job page opened while queued shows the first log line within a second of RUNNING."""

import re

import pytest
from playwright.sync_api import expect

from accounts.models import Profile
from jobs.user_actions.services import job_release, job_submit
from tests.browser.support import job_document, login, screenshot, submit_job, wait_for_state
from tests.web.factories import make_job

pytestmark = pytest.mark.browser

BRUSSELS = "Europe/Brussels"
ZONED = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2} CES?T$")


def mark_page(page) -> None:
    page.evaluate("window.__stillTheSamePage = true")


def same_page(page) -> bool:
    return page.evaluate("window.__stillTheSamePage === true")


@pytest.fixture
def queued(portal, slave, settings):
    settings.PORTAL_TASK_MODE = "record"  # nothing launches: jobs stay as the test makes them
    return portal


def test_zone_is_detected_once_shown_and_used_for_every_time(queued, page_of, js_errors):
    job = submit_job(queued, "sleep 300", name="zoned-job")
    page = page_of(timezone_id=BRUSSELS)
    login(page, queued)
    zone = page.locator("#nav-zone")
    expect(zone).to_have_attribute("data-zone-saved", "1")  # saved by portal.js, once
    expect(zone).to_contain_text(BRUSSELS)
    assert Profile.objects.get(user=queued.user).time_zone == BRUSSELS

    page.goto(queued.at(f"/jobs/{job.uuid}/"))
    created = page.locator("#job-live dl.kv time").first
    expect(created).to_have_text(ZONED)
    assert re.match(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} CES?T$", created.get_attribute("title"))
    page.goto(queued.at("/"))
    relative = page.locator(f'[data-job="{job.uuid}"] time[data-style="relative"]')
    expect(relative).to_have_text(re.compile(r"(a few seconds|\d+ min) ago"))
    assert re.search(r" CES?T$", relative.get_attribute("title"))
    screenshot(page, "dashboard-zoned")

    # Another browser zone does not overwrite the saved one; the profile changes it.
    other = page_of(timezone_id="Asia/Tokyo")
    login(other, queued)
    expect(other.locator("#nav-zone")).to_contain_text(BRUSSELS)
    other.goto(queued.at("/profile/"))
    other.select_option("#id_time_zone", "Asia/Tokyo")
    other.click("#time-zone-save")
    expect(other.locator(".alert-success")).to_contain_text("Asia/Tokyo")
    expect(other.locator("#nav-zone")).to_contain_text("Asia/Tokyo")
    other.goto(queued.at(f"/jobs/{job.uuid}/"))
    expect(other.locator("#job-live dl.kv time").first).to_have_text(re.compile(r" JST$"))
    assert not js_errors


def test_reservation_form_has_iso_inputs_with_next_hour_defaults(queued, page_of, js_errors):
    queued.user.is_superuser = queued.user.is_staff = True
    queued.user.save()
    Profile.objects.create(user=queued.user, time_zone=BRUSSELS)
    page = page_of(timezone_id=BRUSSELS)
    login(page, queued)
    page.goto(queued.at("/reservations/new/"))
    start, end = page.locator("#id_start"), page.locator("#id_end")
    assert start.get_attribute("type") == "text"
    expect(page.locator("label[for=id_start]")).to_contain_text(f"Start ({BRUSSELS})")
    begin = start.input_value()
    assert re.match(r"^\d{4}-\d{2}-\d{2} \d{2}:00$", begin), begin
    until = end.input_value()
    assert int(until[11:13]) == (int(begin[11:13]) + 1) % 24
    screenshot(page, "reservation-form-zoned")
    assert not js_errors


def test_dashboard_ticks_and_refreshes_and_clusters_bars_show_free(queued, page, js_errors):
    running = make_job(
        owner=queued.user,
        project=queued.project,
        status="RUNNING",
        slave=queued_slave(),
        gpu_ids=[0],
        name="ticking",
    )
    login(page, queued)
    mark_page(page)
    ran = page.locator(f'tr[data-job="{running.uuid}"] .running-for')
    first = ran.text_content()
    expect(ran).not_to_have_text(first, timeout=3_000)  # "Running for" ticks every second
    live = page.locator("#dashboard-live")
    expect(live).to_have_attribute("data-polling", "5s")

    # A job appearing elsewhere shows up without a reload (polled every 5 s while active).
    other = make_job(owner=queued.user, project=queued.project, status="QUEUED", name="newcomer")
    expect(page.locator(f'[data-job="{other.uuid}"]')).to_be_visible(timeout=8_000)
    assert same_page(page)

    page.goto(queued.at("/live/clusters/"))
    mark_page(page)
    gpu = page.locator('[data-cluster="1"] [data-resource="gpu"]')
    expect(gpu).to_have_text("3/4")
    bar = page.locator('[data-cluster="1"] [data-free-percent]').first
    expect(bar).to_have_attribute("data-free-percent", "75")  # free share, not usage
    width = bar.evaluate("el => el.firstElementChild.style.width")
    assert width == "75%"
    running.status = "FINISHED"
    running.save()
    expect(gpu).to_have_text("4/4", timeout=8_000)
    expect(page.locator('[data-cluster="1"] [data-free-percent]').first).to_have_attribute(
        "data-free-percent", "100"
    )
    assert same_page(page), "Live > Clusters reloaded instead of updating itself"
    screenshot(page, "live-clusters-free-bars")
    assert not js_errors


def queued_slave():
    from clusters.models import Slave

    return Slave.objects.get(name="gpu1")


@pytest.mark.docker
def test_log_follows_within_a_second_of_running(portal, local_slave, page, js_errors):
    job = job_submit(
        user=portal.user,
        project=portal.project,
        document=job_document("sh -c 'echo first-line; sleep 30'", name="quick-start", gpus=0),
        hold=True,  # the page is opened while it waits
    )
    login(page, portal)
    page.goto(portal.at(f"/jobs/{job.uuid}/"))
    expect(page.locator("#job-status")).to_have_attribute("data-state", "ONHOLD")
    expect(page.locator("#job-log-state")).to_have_text("starts when the job runs")
    # The moment the first line shows (the browser's clock is this machine's clock).
    page.evaluate(
        """() => {
          const box = document.getElementById('job-log-text');
          new MutationObserver(() => {
            if (!window.__firstLineAt && box.textContent.includes('first-line'))
              window.__firstLineAt = Date.now();
          }).observe(box, {childList: true, subtree: true, characterData: true});
        }"""
    )
    job_release(job=job, user=portal.user)
    job = wait_for_state(job, "RUNNING")
    expect(page.locator("#job-log-text")).to_contain_text("first-line", timeout=5_000)
    shown_at = page.evaluate("window.__firstLineAt") / 1000
    delay = shown_at - job.started_at.timestamp()
    print(f"first log line shown {delay:.2f} s after RUNNING (started_at)")
    assert delay <= 1.0, f"the log followed {delay:.2f} s after RUNNING"
    expect(page.locator("#job-status")).to_have_attribute("data-state", "RUNNING")
    expect(page.locator("#job-log-state")).to_have_text("live")
    screenshot(page, "job-log-following")
    assert not js_errors
