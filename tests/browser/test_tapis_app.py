"""The app page in a real browser: the generated form is checked as one types (htmx), then
submits a job whose page shows the Tapis status card."""

import re

import pytest
from playwright.sync_api import expect

from jobs.models import Job
from tapis.services import app_create
from tests.browser.support import login, screenshot

pytestmark = pytest.mark.browser

APP = {
    "id": "hello",
    "version": "1.0",
    "description": "Prints its arguments",
    "visibility": "project",
    "project": "browsing",
    "containerImage": "gpuportal/busybox:latest",
    "command": "echo",
    "jobAttributes": {
        "parameterSet": {
            "appArgs": [
                {"name": "greeting", "inputMode": "REQUIRED", "arg": ""},
                {"name": "out", "inputMode": "INCLUDE_BY_DEFAULT", "arg": "${JobOutputDir}"},
            ]
        },
        "resources": {"gpus": 0, "cpus": 1, "cpuMemoryGb": 1},
    },
}


def test_form_is_checked_as_one_types_and_submits(portal, slave, settings, page, js_errors):
    settings.PORTAL_TASK_MODE = "record"  # the job stays queued: nothing is launched
    app_create(user=portal.user, definition=APP)
    login(page, portal)
    page.goto(portal.at("/apps/"))
    expect(page.locator('tr[data-app="hello"]')).to_be_visible()
    page.goto(portal.at("/apps/hello/1.0/"))
    expect(page.locator('input[name="arg:out"]')).to_have_value("${JobOutputDir}")
    page.fill('input[name="description"]', "typed")
    expect(page.locator("#app-form-errors")).to_contain_text("required argument 'greeting'")
    page.fill('input[name="arg:greeting"]', "hi there")
    expect(page.locator("#app-form-ok")).to_contain_text("echo hi there /job/outputs")
    screenshot(page, "tapis-app-form")
    page.click("text=Submit job")
    expect(page).to_have_url(re.compile(r"/jobs/[0-9a-f-]{36}/$"))
    expect(page.locator("#job-tapis-status")).to_have_text("PENDING")
    expect(page.locator('tr[data-stage="PENDING"]')).to_be_visible()
    job = Job.objects.get()
    # Arguments are shell-like words: "hi there" is two of them, as in Tapis' command line.
    assert job.request["docker"]["command"] == "echo hi there /job/outputs"
    assert not js_errors
