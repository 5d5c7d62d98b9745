"""Helpers of the browser tests: signing in, screenshots, job documents, waiting for a state."""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "test-artifacts" / "screenshots"
USERNAME = "dana"
PASSWORD = "dana-browser-pw"


@dataclass
class Portal:
    url: str
    user: object
    project: object

    def at(self, path: str) -> str:
        return self.url + path


def login(page, portal: Portal, *, username: str = USERNAME, password: str = PASSWORD) -> None:
    """Sign in through the login form."""
    from playwright.sync_api import expect

    page.goto(portal.at("/accounts/login/"))
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("form[action='/accounts/login/'] button[type=submit]")
    expect(page.locator("#nav-user")).to_have_text(username)


def screenshot(page, name: str) -> Path:
    """Save a full-page screenshot as a test artifact (test-artifacts/screenshots/NAME.png)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def job_document(command, *, name: str = "browser", gpus: int = 1) -> dict:
    from tests.integration.docker_support import TEST_IMAGE

    return copy.deepcopy(
        {
            "name": name,
            "request": {
                "resources": {"clusterId": 1, "gpus": gpus, "cpus": 1, "cpuMemoryGb": 1},
                "docker": {"image": TEST_IMAGE, "command": command},
                "scheduling": {},
            },
        }
    )


def submit_job(portal: Portal, command, **kwargs):
    """Submit a job through the service (not the browser), as the portal's member."""
    from jobs.user_actions.services import job_submit

    return job_submit(
        user=portal.user, project=portal.project, document=job_document(command, **kwargs)
    )


def wait_for_state(job, *states: str, timeout: float = 30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job.refresh_from_db()
        if job.status in states:
            return job
        time.sleep(0.1)
    raise AssertionError(f"job stayed {job.status} (wanted {states}): {job.end_reason}")


def fill_editor(page, text: str) -> None:
    """Replace Create Job's document as a paste would: through the code editor (CodeMirror)
    when its script runs, else in the plain textarea. The form reacts as to typing."""
    if page.locator("#job-editor").count():
        page.evaluate(
            """text => {
              const cm = document.getElementById('job-editor').CodeMirror;
              cm.focus();
              cm.setSelection({line: 0, ch: 0}, {line: cm.lineCount(), ch: 0});
              cm.replaceSelection(text, null, 'paste');
            }""",
            text,
        )
    else:
        page.fill("#id_document", text)
