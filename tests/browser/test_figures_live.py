"""Issue 28 items 3, 4 and 5 in chromium: figures that are right and live.

- Every card of the job page follows the job's state without a reload (QUEUED -> RUNNING ->
  FINISHED while the page is open): the Tapis status card, the outputs card (from "copied when
  the job ends" to the files), the actions; no card keeps a stale text.
- The certificate list refreshes after a download.
- The dashboard counts reserved GPUs as reserved and shows a queued job's start estimate.
- Create Job: reservations chosen by name; a job built from the fields has no example's
  description.
"""

import json
import re
from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from accounts.models import Profile
from jobs.execution.outputs import job_archive_outputs_dir
from jobs.models import Job, JobEvent, StartEstimate
from jobs.transitions import Stage, job_stage_record
from reservations.models import Reservation
from tests.browser.support import login, screenshot
from tests.web.factories import make_job

pytestmark = pytest.mark.browser

BRUSSELS = "Europe/Brussels"


@pytest.fixture
def queued(portal, slave, settings, tmp_path):
    settings.PORTAL_TASK_MODE = "record"  # nothing launches: jobs move as the test moves them
    settings.PORTAL_JOB_ARCHIVE_DIR = str(tmp_path / "archive")
    return portal


def mark_page(page) -> None:
    page.evaluate("window.__stillTheSamePage = true")


def same_page(page) -> bool:
    return page.evaluate("window.__stillTheSamePage === true")


def move(job, status: str, **fields) -> None:
    """The job's row moved as the runtime would leave it (no runtime here), with its event."""
    now = timezone.now()
    Job.objects.filter(pk=job.pk).update(status=status, status_updated=now, **fields)
    JobEvent.objects.create(job=job, time=now, type="Status Change", new_state=status)


def test_every_card_of_the_job_page_follows_its_state(queued, page, js_errors):
    job = make_job(
        owner=queued.user, project=queued.project, status="QUEUED", name="app-run",
        app_id="hello-app", app_version="1.0",
    )  # fmt: skip
    job_stage_record(job=job, stage=Stage.PENDING, message="from app hello-app")
    login(page, queued)
    page.goto(queued.at(f"/jobs/{job.uuid}/"))
    mark_page(page)
    tapis = page.locator("#job-tapis-status")
    expect(page.locator("#job-status")).to_have_attribute("data-state", "QUEUED")
    queued_tapis = tapis.text_content()
    expect(page.locator("#outputs-empty")).to_have_text("Outputs are copied when the job ends.")
    expect(page.locator("#action-cancel")).to_be_visible()

    from clusters.models import Slave

    slave = Slave.objects.get(name="gpu1")
    move(job, "RUNNING", slave=slave, gpu_ids=[0], started_at=timezone.now())
    job_stage_record(job=job, stage=Stage.RUNNING, message="container 0123456789ab")
    expect(page.locator("#job-status")).to_have_attribute("data-state", "RUNNING", timeout=8_000)
    expect(tapis).to_have_text("RUNNING", timeout=8_000)
    assert queued_tapis != "RUNNING"
    expect(page.locator('#job-stage-table tr[data-stage="RUNNING"]')).to_have_count(1)

    outputs = job_archive_outputs_dir(job)
    outputs.mkdir(parents=True)
    (outputs / "result.txt").write_text("42\n")
    move(job, "FINISHED", ended_at=timezone.now(), exit_code=0)
    expect(page.locator("#job-status")).to_have_attribute("data-state", "FINISHED", timeout=8_000)
    expect(tapis).to_have_text("FINISHED", timeout=8_000)
    expect(page.locator("#outputs-table")).to_contain_text("result.txt")
    expect(page.locator("#outputs-empty")).to_have_count(0)
    expect(page.locator("#action-cancel")).to_have_count(0)
    expect(page.locator("#job-live .polling-indicator")).to_have_count(0)
    expect(page.locator("#job-log-state")).not_to_have_text(re.compile("starts when|live"))
    # Events seconds apart: the timeline gives their seconds (the time rule allows it).
    seconds = page.locator('#job-timeline time[data-style="seconds"]')
    assert seconds.count() >= 2, page.locator("#job-timeline").inner_text()
    expect(seconds.first).to_have_text(re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC$"))
    assert same_page(page), "the job page reloaded instead of updating its cards"
    screenshot(page, "job-cards-follow-state")
    assert not js_errors


def test_the_certificate_list_refreshes_after_a_download(queued, page, js_errors):
    login(page, queued)
    page.goto(queued.at("/certificates/"))
    mark_page(page)
    none_yet = page.get_by_text("You have no login certificates yet.")
    expect(none_yet).to_be_visible()
    with page.expect_download() as download:
        page.get_by_role("button", name="Download a new login PEM").click()
    assert download.value.suggested_filename.endswith(".pem")
    expect(none_yet).to_have_count(0, timeout=8_000)
    expect(page.locator("#cert-list tbody tr")).to_have_count(1)
    expect(page.locator("#cert-list")).to_contain_text("valid")
    assert same_page(page)
    # Revoked: the message once, the row says so.
    page.click("#cert-list button:has-text('Revoke')")
    expect(page.locator("text=/Certificate [0-9a-f]+ revoked\\./")).to_have_count(1)
    expect(page.locator("#cert-list .badge")).to_contain_text("revoked")
    assert not js_errors


def test_dashboard_shows_reserved_gpus_and_a_queued_jobs_estimate(queued, page_of, js_errors):
    from accounts.models import Project

    Profile.objects.create(user=queued.user, time_zone=BRUSSELS)
    now = timezone.now()
    others = Project.objects.create(name="others", gid=4712)
    workshop = Reservation.objects.create(
        name="workshop", cluster_id=1, gpu_count=3, start=now - timedelta(hours=1),
        end=now + timedelta(hours=2),
    )  # fmt: skip
    workshop.projects.add(others)
    job = make_job(owner=queued.user, project=queued.project, status="QUEUED", name="waits")
    start = (now + timedelta(hours=3)).replace(second=0, microsecond=0)
    StartEstimate.objects.create(
        job=job, first_made_at=now, first_start=start, made_at=now, start=start
    )
    page = page_of(timezone_id=BRUSSELS)
    login(page, queued)
    expect(page.locator("#stat-free-gpus")).to_have_text(re.compile(r"^1\s*/ 4$"))
    expect(page.locator("#stat-reserved-gpus")).to_have_text("(+ 3 reserved)")
    estimate = page.locator(f'[data-job="{job.uuid}"] .job-estimate')
    expect(estimate).to_contain_text("Estimated start:")
    expect(estimate.locator("time")).to_have_text(
        re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2} CES?T$")
    )
    expect(estimate).to_contain_text(re.compile(r"\(in (2h 5\dm|3h)"))
    page.goto(queued.at("/live/clusters/"))
    expect(page.locator('[data-cluster="1"] [data-resource="gpu"]')).to_have_text("1/4")
    expect(page.locator('[data-cluster="1"] [data-reserved-gpus]')).to_have_text("+ 3 reserved")
    screenshot(page, "live-clusters-reserved")
    assert not js_errors


def test_create_job_reservation_by_name_and_no_inherited_description(queued, page, js_errors):
    now = timezone.now()
    mine = Reservation.objects.create(
        name="thesis-deadline", cluster_id=1, start=now + timedelta(hours=1),
        end=now + timedelta(hours=4),
    )  # fmt: skip
    mine.projects.add(queued.project)
    login(page, queued)
    page.goto(queued.at("/jobs/new/"))
    select = page.locator("#id_reservations")
    expect(select.locator("option")).to_have_count(1)
    expect(select.locator("option")).to_contain_text(re.compile(r"^thesis-deadline \(cluster 1, "))
    page.fill("#id_name", "my-own-job")
    select.select_option(label=select.locator("option").text_content())
    page.fill("#id_command", "echo mine")
    doc = json.loads(page.locator("#id_document").input_value())
    assert doc["name"] == "my-own-job"
    assert "description" not in doc, doc.get("description")
    assert doc["request"]["scheduling"]["reservationIds"] == [str(mine.uuid)]
    page.click("#job-submit")
    expect(page.locator("#job-name")).to_have_text("my-own-job")
    job = Job.objects.get(name="my-own-job")
    assert not job.description
    assert job.reservation_ids == [str(mine.uuid)]
    expect(page.locator("#job-reservations a")).to_have_text("thesis-deadline")
    assert not js_errors
