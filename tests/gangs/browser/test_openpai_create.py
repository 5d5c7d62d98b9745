"""Create Job in the browser with OpenPAI configs: a pasted config is shown as its task roles
(with the multi-task notice), an uploaded one-task config goes into the editor and is submitted
as one job. No Docker engine: the fake slave of tests/conftest.py, tasks only recorded."""

import json
import re

import pytest
from playwright.sync_api import expect

from jobs.models import Job
from tests.browser.support import fill_editor, login, screenshot
from tests.gangs import OPENPAI_SEED

pytestmark = pytest.mark.browser

SEED = OPENPAI_SEED
JOB_URL = re.compile(r"/jobs/[0-9a-f-]{36}/$")
SINGLE = {
    "jobName": "pai-browser",
    "image": "gpuportal/busybox:latest",
    "taskRoles": [
        {"name": "solo", "taskNumber": 1, "cpuNumber": 1, "memoryMB": 256, "gpuNumber": 0,
         "command": "echo hi"}
    ],
}  # fmt: skip


def seed_example() -> dict:
    lines = SEED.read_text().splitlines()
    doc = json.loads("\n".join(line for line in lines if not line.strip().startswith("//")))
    doc["image"] = "gpuportal/busybox:latest"
    return doc


@pytest.fixture
def queued(portal, slave, settings):
    settings.PORTAL_TASK_MODE = "record"
    return portal


def test_openpai_config_pasted_then_uploaded(queued, page, js_errors, tmp_path):
    login(page, queued)
    page.goto(queued.at("/jobs/new/"))
    editor = page.locator("#id_document")
    fill_editor(page, json.dumps(seed_example(), indent=2))  # fires "input": the page reads it
    roles = page.locator("#openpai-roles")
    expect(roles).to_be_visible()
    expect(roles.locator("tbody tr")).to_have_count(2)
    expect(roles.locator("tbody tr").nth(0)).to_contain_text("ps_server")
    expect(roles.locator("tbody tr").nth(1)).to_contain_text("worker")
    expect(page.locator("#editor-status")).to_contain_text("runs as one job of 4 task(s)")
    expect(page.locator("#job-json-errors")).to_be_hidden()
    screenshot(page, "create-job-openpai-roles")

    # A bad config: every error with its path, next to the editor.
    bad = seed_example()
    bad["taskRoles"][1]["taskNumber"] = 0
    fill_editor(page, json.dumps(bad, indent=2))
    expect(page.locator("#job-json-errors")).to_contain_text("taskRoles[1].taskNumber")

    # Upload a one-task config: it replaces the editor's text and runs as one job.
    path = tmp_path / "single.json"
    path.write_text(json.dumps(SINGLE))
    page.set_input_files("#id_document_file", str(path))
    expect(page.locator("#openpai-roles-note")).to_have_text(
        "One task role of one task: it runs as one job."
    )
    expect(roles.locator("tbody tr")).to_have_count(1)
    assert json.loads(editor.input_value()) == SINGLE
    page.click("#job-submit")
    expect(page).to_have_url(JOB_URL)
    expect(page.locator(".alert-success")).to_have_text(
        "OpenPAI job pai-browser submitted: one task of task role solo, as one job: queued."
    )
    job = Job.objects.get(name="pai-browser")
    assert job.request["docker"]["environment"]["PAI_CURRENT_TASK_ROLE_NAME"] == "solo"
    assert not js_errors


TWO_BY_TWO = {
    "jobName": "pai-two-by-two",
    "image": "gpuportal/busybox:latest",
    "taskRoles": [
        {"name": "ps", "taskNumber": 2, "cpuNumber": 1, "memoryMB": 256, "gpuNumber": 0,
         "command": "sleep 1"},
        {"name": "worker", "taskNumber": 2, "cpuNumber": 1, "memoryMB": 256, "gpuNumber": 1,
         "command": "sleep 1"},
    ],
}  # fmt: skip


def test_uploaded_two_roles_of_two_tasks_are_said_once(queued, page, js_errors, tmp_path):
    """The message after submitting says what the config is (issue 27 item 5: it said "one task
    role, one task" of a 2 x 2 config), and a later page does not show it again."""
    login(page, queued)
    page.goto(queued.at("/jobs/new/"))
    path = tmp_path / "two-by-two.json"
    path.write_text(json.dumps(TWO_BY_TWO))
    page.set_input_files("#id_document_file", str(path))
    expect(page.locator("#openpai-roles-note")).to_contain_text("Several tasks")
    expect(page.locator("#openpai-roles tbody tr")).to_have_count(2)
    page.click("#job-submit")
    expect(page).to_have_url(JOB_URL)
    said = (
        "OpenPAI job pai-two-by-two submitted: 4 tasks in 2 task roles (ps ×2, worker ×2), "
        "started together: queued."
    )
    expect(page.locator(".alert-success")).to_have_text(said)
    screenshot(page, "create-job-openpai-two-by-two-submitted")
    for later in ("/jobs/", page.url, "/jobs/new/"):
        page.goto(later if later.startswith("http") else queued.at(later))
        expect(page.locator(".alert-success")).to_have_count(0)
    assert not js_errors
