"""Issue 29 item 3 in chromium: Create Job's standing follows the job being written. Changing the
GPUs field, or maxDuration in the JSON editor, changes the fits / does not fit line (asked of the
standing endpoint, debounced: a burst of keystrokes is one request or two); the dashboard's card
and the box pass axe, with the budgets' renewal in the viewer's zone."""

import pytest
from playwright.sync_api import expect

from accounts.timezones import profile_set_time_zone
from quotas.models import Quota
from tests.browser.support import fill_editor, login, screenshot
from tests.browser.test_every_page import AXE, AXE_RUN, AXE_TAGS

pytestmark = pytest.mark.browser

STANDING = "/api/portal/quotas/standing"


@pytest.fixture
def limited(portal, slave, settings):
    settings.PORTAL_TASK_MODE = "record"
    Quota.objects.create(project=portal.project, gpus_hard=1, gpu_hours_hard=5)
    return portal


def test_changing_gpus_or_max_duration_changes_the_fit_line(limited, page, js_errors):
    asked = []
    page.on("request", lambda request: STANDING in request.url and asked.append(request.url))
    login(page, limited)
    page.goto(limited.at("/jobs/new/"))
    fit = page.locator("#standing-fit")
    # The example (maxDuration 1 hour) with 1 GPU: within 1 GPU at once and 5 GPU-hours.
    expect(fit).to_have_attribute("data-fits", "now")
    page.locator("[data-doc-field=gpus]").fill("1")
    expect(page.locator("#standing-may-use")).to_contain_text("1 GPU-hours (1 GPU)")
    expect(fit).to_contain_text("Fits your limits")
    expect(page.locator("#standing-limits")).to_contain_text("Project browsing (all its members)")
    expect(page.locator("#standing-limits")).to_contain_text("GPUs at once: 0 held of 1")
    expect(page.locator("#standing-renews time")).to_have_count(1)

    gpus = page.locator("[data-doc-field=gpus]")
    before = len(asked)
    gpus.select_text()
    gpus.press_sequentially("2000", delay=0)  # four keystrokes, four input events
    expect(fit).to_have_attribute("data-fits", "never")
    expect(fit).to_contain_text("may hold at most 1 GPUs at once, this job asks for 2000")
    page.wait_for_timeout(600)  # past the debounce: nothing more is asked
    burst = asked[before:]
    assert 1 <= len(burst) < 4 and "gpus=2000" in burst[-1], burst
    gpus.fill("2")
    expect(fit).to_contain_text("this job asks for 2.")
    screenshot(page, "quota-standing-never")

    page.locator("[data-doc-field=gpus]").fill("1")
    expect(fit).to_have_attribute("data-fits", "now")
    # maxDuration written in the JSON document: 10 GPU-hours of a 5 GPU-hour budget.
    text = page.locator("#id_document").input_value().replace('"1 hour"', '"10 hours"')
    fill_editor(page, text)
    expect(fit).to_have_attribute("data-fits", "never")
    expect(fit).to_contain_text("project browsing has 5 GPU-hours a month; this job may use 10")
    expect(page.locator("#standing-may-use")).to_contain_text("10 GPU-hours")
    assert not js_errors


def test_the_standing_and_the_dashboard_card_pass_axe_in_the_viewers_zone(limited, page, js_errors):
    Quota.objects.create(user=limited.user, gpus_hard=2, gpus_soft=1)
    profile_set_time_zone(user=limited.user, zone="Asia/Kolkata")
    login(page, limited)
    page.goto(limited.at("/"))
    card = page.locator("#limits-card")
    expect(card).to_contain_text("You (dana), in every project")
    expect(card.locator('[data-limit="gpu_hours"]')).to_contain_text("0 h used of 5")
    expect(card.locator("time")).to_contain_text("05:30 IST")  # the month's end, in Kolkata
    page.add_script_tag(path=str(AXE))
    assert page.evaluate(AXE_RUN, AXE_TAGS) == []
    page.goto(limited.at("/jobs/new/"))
    expect(page.locator("#standing-limits")).to_contain_text("GPUs at once: 0 held of 2 (soft 1)")
    expect(page.locator("#standing-renews time")).to_contain_text("05:30 IST")
    page.add_script_tag(path=str(AXE))
    assert page.evaluate(AXE_RUN, AXE_TAGS) == []
    assert not js_errors
