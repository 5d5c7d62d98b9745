"""Every page finished (issue 28 item 4), in Chromium: a refused page is the portal's styled
403 with its title, language and navigation; the API docs follow dark mode; a job without
samples draws no charts; only a Tapis job carries the Tapis card; a user without a project is
told what to ask for and offered neither Create Job nor Clone."""

from __future__ import annotations

import base64

import pytest
from playwright.sync_api import expect

from accounts.models import Membership, Project
from jobs.user_actions.shares import job_share_create
from tests.browser.support import login, screenshot
from tests.web.factories import make_job

pytestmark = pytest.mark.browser

# The mean luminance (0-255) of what the page shows, from a screenshot drawn on a canvas: what
# the reader sees, CSS filters included.
MEAN_LUMINANCE = """async (png) => {
  const image = new Image();
  image.src = 'data:image/png;base64,' + png;
  await image.decode();
  const canvas = document.createElement('canvas');
  canvas.width = image.width; canvas.height = image.height;
  const context = canvas.getContext('2d');
  context.drawImage(image, 0, 0);
  const data = context.getImageData(0, 0, image.width, image.height).data;
  let sum = 0;
  for (let i = 0; i < data.length; i += 4)
    sum += 0.2126 * data[i] + 0.7152 * data[i + 1] + 0.0722 * data[i + 2];
  return sum / (data.length / 4);
}"""


@pytest.fixture
def recorded(portal, slave, settings):
    settings.PORTAL_TASK_MODE = "record"  # nothing is launched: jobs stay as made
    return portal


def test_a_refused_page_is_the_styled_403_with_navigation(recorded, page, js_errors):
    login(page, recorded)
    response = page.goto(recorded.at("/reservations/new/"))
    assert response.status == 403
    expect(page).to_have_title("Not allowed · GPU Portal")
    assert page.locator("html").get_attribute("lang") == "en"
    expect(page.locator("h1")).to_have_text("Not allowed")
    expect(page.locator("main")).to_contain_text("Only admins create, change or delete")
    expect(page.locator("#nav-user")).to_have_text(recorded.user.username)
    expect(page.get_by_role("link", name="Go to the portal")).to_be_visible()
    screenshot(page, "reservation-new-refused")
    # Chromium reports the page's own 403 as a failed load; nothing else may fail.
    assert [e for e in js_errors if "status of 403" not in e] == []


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_api_docs_follow_dark_mode(recorded, page_of, scheme, js_errors):
    page = page_of(color_scheme=scheme)
    login(page, recorded)
    failed = []
    page.on("response", lambda r: r.status >= 400 and failed.append(f"{r.status} {r.url}"))
    page.goto(recorded.at("/api/docs/"))
    # Swagger UI builds the page from the schema after load: slow on a busy machine.
    expect(page.locator(".swagger-ui .info .title")).to_be_visible(timeout=20_000)
    expect(page.locator("html")).to_have_attribute("data-bs-theme", scheme)
    png = base64.b64encode(page.screenshot()).decode()
    luminance = page.evaluate(MEAN_LUMINANCE, png)
    if scheme == "dark":
        assert luminance < 70, luminance
    else:
        assert luminance > 180, luminance
    screenshot(page, f"api-docs-{scheme}")
    # Chromium sometimes asks for /favicon.ico on its own, whatever the page's icon link says.
    failed = [f for f in failed if not f.endswith("/favicon.ico")]
    assert failed == []
    assert [e for e in js_errors if "status of 404" not in e] == []


def test_a_job_without_samples_draws_no_charts(recorded, page, js_errors):
    job = make_job(owner=recorded.user, project=recorded.project, name="no-samples")
    login(page, recorded)
    page.goto(recorded.at(f"/jobs/{job.uuid}/"))
    expect(page.locator("#job-metrics")).to_have_attribute("data-samples", "0")
    expect(page.locator("#job-metrics-empty")).to_be_visible()
    expect(page.locator("#job-metrics-charts")).to_be_hidden()
    assert page.evaluate("Chart.getChart('chart-cpu-mem')") is None
    assert js_errors == []


def test_the_tapis_card_only_on_a_tapis_job(recorded, page, js_errors):
    gpulab = make_job(owner=recorded.user, project=recorded.project, name="plain-gpulab")
    tapis = make_job(
        owner=recorded.user,
        project=recorded.project,
        name="from-an-app",
        app_id="classify",
        app_version="1.0",
        origin={"tapis": {"appId": "classify", "appVersion": "1.0"}},
    )
    login(page, recorded)
    page.goto(recorded.at(f"/jobs/{gpulab.uuid}/"))
    expect(page.locator("#job-request")).to_be_visible()
    expect(page.locator("#job-tapis")).to_have_count(0)
    expect(page.locator("#job-resubmit")).to_have_count(0)
    page.goto(recorded.at(f"/jobs/{tapis.uuid}/"))
    expect(page.locator("#job-tapis")).to_be_visible()
    expect(page.locator("#job-resubmit")).to_be_visible()
    assert js_errors == []


def test_a_user_without_a_project_is_told_what_to_ask_for(
    recorded, page, js_errors, django_user_model
):
    loner = django_user_model.objects.create_user("lone", "lone@example.org", "lone-browser-pw")
    shared = make_job(owner=recorded.user, project=recorded.project, name="shared-run")
    job_share_create(job=shared, user=recorded.user, grantee_user=loner)
    login(page, recorded, username="lone", password="lone-browser-pw")
    page.goto(recorded.at("/"))
    warning = page.locator("#no-project")
    expect(warning).to_be_visible()
    expect(warning).to_contain_text("not in a project")
    expect(warning).to_contain_text("add your account lone")
    expect(page.locator("main").get_by_role("link", name="Create Job")).to_have_count(0)
    screenshot(page, "dashboard-no-project")
    # A job shared with them opens in full, without a Clone they could not submit.
    page.goto(recorded.at(f"/jobs/{shared.uuid}/"))
    expect(page.locator("#job-request")).to_be_visible()
    expect(page.locator("#job-clone")).to_have_count(0)

    # In a project, the same user gets neither the warning nor a missing Clone.
    Membership.objects.create(user=loner, project=Project.objects.get(pk=recorded.project.pk))
    page.reload()
    expect(page.locator("#job-clone")).to_be_visible()
    page.goto(recorded.at("/"))
    expect(page.locator("#no-project")).to_have_count(0)
    assert js_errors == []


def test_a_revoked_certificate_is_announced_once(recorded, page, js_errors):
    from accounts.certs.services import login_certificate_issue

    login_certificate_issue(user=recorded.user)
    login(page, recorded)
    page.goto(recorded.at("/certificates/"))
    expect(page).to_have_title("Login certificates · GPU Portal")
    page.locator("form[action*='/revoke/'] button").click()
    expect(page.get_by_text("revoked", exact=False).first).to_be_visible()
    expect(page.locator(".alert", has_text="revoked")).to_have_count(1)
    assert js_errors == []


def test_a_job_names_its_reservations(recorded, page, js_errors):
    from datetime import timedelta

    from django.utils import timezone

    from clusters.models import Cluster
    from reservations.models import Reservation

    now = timezone.now()
    reservation = Reservation.objects.create(
        name="paper-deadline",
        cluster=Cluster.objects.get(id=1),
        gpu_count=1,
        start=now + timedelta(days=1),
        end=now + timedelta(days=2),
    )
    gone = "00000000-0000-4000-8000-000000000000"
    job = make_job(
        owner=recorded.user,
        project=recorded.project,
        name="reserved",
        reservation_ids=[str(reservation.uuid), gone],
    )
    login(page, recorded)
    page.goto(recorded.at(f"/jobs/{job.uuid}/"))
    named = page.locator("#job-reservations")
    expect(named.get_by_role("link", name="paper-deadline")).to_have_attribute(
        "href", f"/reservations/{reservation.uuid}/"
    )
    expect(named).to_contain_text(f"{gone} (no such reservation)")
    assert js_errors == []
