"""Item 4 of issue #16 in chromium on a real Docker engine: stderr lines marked apart from
stdout (Docker's multiplexed frames), search with highlighted matches, the wrap toggle, and the
whole log downloaded as a text/plain attachment."""

import time

import pytest
from playwright.sync_api import expect

from jobs.execution.logs import archive_path, stderr_path
from tests.browser.support import login, screenshot, submit_job, wait_for_state

pytestmark = [pytest.mark.browser, pytest.mark.docker]

COMMAND = (
    # Pauses between the streams: stdout and stderr are separate pipes, so only time orders
    # lines written together.
    "sh -c 'echo out-1; sleep 0.3; echo err-1 >&2; sleep 0.3; echo out-2; sleep 2; "
    "echo a-very-long-line-$(seq -s - 1 200); echo err-2 >&2'"
)


def test_log_tools_and_stderr_marks(portal, local_slave, page, js_errors):
    job = submit_job(portal, COMMAND, name="two-streams", gpus=0)
    job = wait_for_state(job, "RUNNING")
    login(page, portal)
    page.goto(portal.at(f"/jobs/{job.uuid}/"))
    log = page.locator("#job-log-text")
    # While it runs (served from the spool): stderr is marked apart.
    expect(log.locator(".log-stderr").first).to_contain_text("err-1", timeout=10_000)
    assert "out-1" not in log.locator(".log-stderr").first.text_content()

    job = wait_for_state(job, "FINISHED", timeout=30)
    expect(log).to_contain_text("err-2", timeout=10_000)
    # The archive (with its stderr ranges) is written before FINISHED; on a loaded machine the
    # file system may show it a moment later than the database shows the state.
    deadline = time.monotonic() + 10
    while not archive_path(job).exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert archive_path(job).exists() and stderr_path(archive_path(job)).exists()
    page.reload()  # from the archive now
    stderr = log.locator(".log-stderr")
    expect(stderr).to_have_count(2)
    expect(stderr.nth(0)).to_have_text("err-1\n")
    expect(stderr.nth(1)).to_have_text("err-2\n")
    text = log.text_content()
    assert text.index("out-1") < text.index("err-1") < text.index("out-2")

    # Search: every match highlighted, the count shown, Enter moves to the next one.
    page.fill("#job-log-search", "out-")
    expect(page.locator("#job-log-matches")).to_have_text("1 of 2 matches")
    assert page.evaluate("CSS.highlights.get('log-search').size") == 2
    page.press("#job-log-search", "Enter")
    expect(page.locator("#job-log-matches")).to_have_text("2 of 2 matches")
    page.fill("#job-log-search", "nothing-like-this")
    expect(page.locator("#job-log-matches")).to_have_text("no matches")
    page.fill("#job-log-search", "err")
    expect(page.locator("#job-log-matches")).to_have_text("1 of 2 matches")
    screenshot(page, "job-log-search")

    # Wrap toggle: the long line wraps by default and scrolls sideways without it.
    box = page.locator("#job-log")
    assert box.evaluate("el => el.scrollWidth <= el.clientWidth + 1")
    page.uncheck("#job-log-wrap")
    expect(box).to_have_class("log-view log-nowrap")
    assert box.evaluate("el => el.scrollWidth > el.clientWidth")
    page.check("#job-log-wrap")
    expect(box).to_have_class("log-view")

    # Download: the whole log, plain text, as an attachment.
    with page.expect_download() as download:
        page.click("#job-log-download")
    saved = download.value
    assert saved.suggested_filename == f"job-{job.uuid}.log"
    content = open(saved.path(), "rb").read().decode()
    assert content.startswith("out-1\n") and "err-2\n" in content and "a-very-long-line" in content
    response = page.request.get(portal.at(f"/jobs/{job.uuid}/log.txt?download=1"))
    assert response.headers["content-type"].startswith("text/plain")
    assert response.headers["content-disposition"].startswith("attachment;")
    assert not js_errors
