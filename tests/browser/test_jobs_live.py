"""Jobs on a real Docker engine, followed in the browser: a v1 document pasted into Create Job
runs with a live log, a running job is cancelled through the dialog, and Live > Slaves shows a
GPU taken without a reload."""

import json
import re

import pytest
from playwright.sync_api import expect

from jobs.models import Job
from tests.browser.support import fill_editor, login, screenshot, submit_job, wait_for_state
from tests.integration.docker_support import TEST_IMAGE

pytestmark = [pytest.mark.browser, pytest.mark.docker]

JOB_URL = re.compile(r"/jobs/[0-9a-f-]{36}/$")
V1_DOCUMENT = {
    "jobDefinition": {
        "name": "numbered-lines",
        "description": "prints five numbered lines, one a second",
        "clusterId": 1,
        "dockerImage": TEST_IMAGE,
        "command": "sh -c 'for i in 1 2 3 4 5; do echo line-$i; sleep 1; done'",
        "resources": {"cpuCores": 1, "gpus": 1, "systemMemory": 1000},
    }
}


def mark_page(page) -> None:
    """A flag that a navigation or reload would drop: the page updated itself if it survives."""
    page.evaluate("window.__stillTheSamePage = true")


def same_page(page) -> bool:
    return page.evaluate("window.__stillTheSamePage === true")


def test_v1_document_converts_runs_and_streams_its_log(portal, local_slave, page, js_errors):
    login(page, portal)
    expect(page.locator("h1")).to_have_text("Dashboard")
    screenshot(page, "dashboard")

    page.goto(portal.at("/jobs/new/"))
    editor = page.locator("#id_document")
    fill_editor(page, json.dumps(V1_DOCUMENT, indent=2))  # fires "input": the editor converts it
    expect(page.locator("#editor-status")).to_have_text("Converted from a v1 jobDefinition to v2.")
    converted = json.loads(editor.input_value())
    assert "jobDefinition" not in converted and converted["name"] == "numbered-lines"
    request = converted["request"]
    assert request["docker"]["image"] == TEST_IMAGE
    assert request["docker"]["command"] == V1_DOCUMENT["jobDefinition"]["command"]
    assert request["resources"] == {**request["resources"], "gpus": 1, "cpus": 1, "cpuMemoryGb": 1}
    # The common fields followed the converted document.
    expect(page.locator("[data-doc-field=name]")).to_have_value("numbered-lines")
    expect(page.locator("#job-json-errors")).to_be_hidden()
    screenshot(page, "create-job-converted-v1")

    page.click("#job-submit")
    expect(page).to_have_url(JOB_URL)
    expect(page.locator(".alert-success")).to_contain_text("Job numbered-lines submitted")
    mark_page(page)
    status, log = page.locator("#job-status"), page.locator("#job-log-text")
    expect(status).to_have_attribute("data-state", "RUNNING", timeout=20_000)
    screenshot(page, "job-detail-running")
    first_offset = int(page.locator("#job-log-poller").get_attribute("data-offset"))

    # The first line shows while the job still runs (the last one comes ~4 s later).
    expect(log).to_contain_text("line-1", timeout=10_000)
    assert "line-5" not in log.text_content()

    expect(status).to_have_attribute("data-state", "FINISHED", timeout=20_000)
    expect(log).to_contain_text("line-5", timeout=10_000)
    text = log.text_content()
    assert [line for line in text.splitlines() if line] == [f"line-{i}" for i in range(1, 6)]
    assert int(page.locator("#job-log-poller").get_attribute("data-offset")) > first_offset
    assert same_page(page), "the job page reloaded instead of updating itself"
    screenshot(page, "job-detail-finished")

    job = Job.objects.get(name="numbered-lines")
    assert job.status == "FINISHED" and job.owner == portal.user
    page.goto(portal.at("/jobs/"))
    row = page.locator(f'tr[data-job="{job.uuid}"]')
    expect(row).to_have_attribute("data-state", "FINISHED")
    expect(row).to_have_attribute("data-full", "1")
    screenshot(page, "jobs-list")
    assert not js_errors


def test_running_job_is_cancelled_through_the_dialog(portal, local_slave, page, js_errors):
    job = wait_for_state(submit_job(portal, "sleep 300", name="long-sleeper"), "RUNNING")
    login(page, portal)
    page.goto(portal.at(f"/jobs/{job.uuid}/"))
    status = page.locator("#job-status")
    expect(status).to_have_attribute("data-state", "RUNNING")

    page.click("#action-cancel")
    dialog = page.locator("#confirm-modal")
    expect(dialog).to_be_visible()
    expect(dialog.locator(".modal-body")).to_contain_text("Cancel job long-sleeper?")
    page.click("#confirm-cancel")

    expect(page.locator(".alert-success")).to_contain_text("is being cancelled")
    expect(status).to_have_attribute("data-state", "CANCELLED", timeout=15_000)
    expect(page.locator("#action-cancel")).to_have_count(0)
    job.refresh_from_db()
    assert job.status == "CANCELLED" and "cancelled by dana" in job.end_reason
    assert not js_errors


def test_live_slaves_shows_a_gpu_taken_without_reload(portal, local_slave, page, js_errors):
    login(page, portal)
    page.goto(portal.at("/live/slaves/"))
    row = page.locator('tr[data-slave="local"]')
    expect(row).to_have_attribute("data-online", "1")
    expect(row.locator("[data-gpu][data-state]")).to_have_count(2)
    expect(row.locator('[data-gpu][data-state="free"]')).to_have_count(2)
    mark_page(page)

    job = submit_job(portal, "sleep 300", name="gpu-taker")  # through the service, not the page

    used = row.locator('[data-gpu][data-state="used"]')
    expect(used).to_have_count(1, timeout=15_000)  # the table polls every 5 s
    expect(row.locator('[data-gpu][data-state="free"]')).to_have_count(1)
    assert f"/jobs/{job.uuid}/" in used.get_attribute("href")
    assert same_page(page), "Live > Slaves reloaded instead of updating itself"
    screenshot(page, "live-slaves")

    page.goto(portal.at("/live/clusters/"))
    expect(page.locator('[data-cluster="1"] [data-resource="gpu"]')).to_have_text("1/2")
    screenshot(page, "live-clusters")
    assert not js_errors
