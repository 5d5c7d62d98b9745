"""Sessions in chromium on the real images: JupyterLab started from the sessions page, opened
through the portal's sign-in hand-off on the session proxy's own origin, a notebook cell run in
a kernel (its WebSocket through the proxy) with its output read back, another user refused;
TensorBoard started on a project folder and rendered through the proxy. The proxy, the seeded
templates and the image fixture are tests/interactive/test_session_e2e.py's."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from interactive.models import InteractiveSession
from interactive.proxy.cookies import cookie_name, cookie_value_make
from tests.browser.support import login, screenshot, wait_for_state
from tests.interactive.test_session_e2e import (  # noqa: F401 (fixtures)
    session_proxy,
    signed_in,
    wait_answer,
)

pytestmark = [pytest.mark.browser, pytest.mark.docker]

APP_TIMEOUT_MS = 90_000  # a cold JupyterLab bundle on a busy 2-core machine


@pytest.fixture
def sessions_portal(
    portal,
    local_slave,
    session_images,
    session_proxy,  # noqa: F811
    seeded_templates,
    settings,
):
    settings.PORTAL_SESSION_PROXY_URL = session_proxy
    return portal


def start_from_page(page, portal, template: str, **fields) -> InteractiveSession:
    """ "New session" on the sessions page; answers the session once its app answers."""
    page.goto(portal.at("/sessions/"))
    page.select_option("#id_template", template)
    page.fill("#id_gpus", "0")
    for name, value in fields.items():
        page.fill(f"#id_{name}", value)
    page.click("#session-new button[type=submit]")
    expect(page.locator(".alert-success")).to_contain_text("started")
    session = InteractiveSession.objects.select_related("job").get(
        job__owner=portal.user, template__slug=template
    )
    job = wait_for_state(session.job, "RUNNING", "FAILED", timeout=60)
    assert job.status == "RUNNING", job.end_reason
    session.refresh_from_db()
    return session


def wait_for_app(proxy: str, session: InteractiveSession, user, path: str) -> None:
    """The app takes seconds to listen: wait for it (as its owner, through the proxy) before
    the browser goes there."""
    answer = wait_answer(signed_in(proxy, session, user), f"{proxy}{session.prefix}{path}")
    assert answer.status_code == 200, answer.text[:500]


def open_in_new_tab(page, session: InteractiveSession):
    """The row's Open button: a new tab through /sessions/<key>/open to the proxy."""
    page.goto(page.url)  # the row shows Open once the session runs
    with page.context.expect_page() as opened:
        page.click(f"[data-session-open='{session.key}']")
    return opened.value


def test_jupyterlab_from_the_sessions_page_runs_a_cell_through_the_proxy(
    sessions_portal,
    session_proxy,  # noqa: F811
    page,
    page_of,
    django_user_model,
):
    portal = sessions_portal
    login(page, portal)
    session = start_from_page(page, portal, "jupyterlab")
    wait_for_app(session_proxy, session, portal.user, "lab")

    sockets: list[str] = []
    page.context.on("page", lambda tab: tab.on("websocket", lambda ws: sockets.append(ws.url)))
    lab = open_in_new_tab(page, session)
    expect(lab).to_have_url(re.compile(re.escape(f"{session_proxy}/s/{session.key}/lab")))
    lab.set_default_timeout(APP_TIMEOUT_MS)
    # The file browser opens in the user's home (the image's preferred_dir): a new notebook
    # can be written there, unlike at the served root.
    expect(lab.locator(".jp-BreadCrumbs")).to_contain_text("portal", timeout=APP_TIMEOUT_MS)
    lab.locator('.jp-LauncherCard[data-category="Notebook"]').first.click()
    # The kernel started through the proxy and answered over its WebSocket: the status bar.
    idle = lab.get_by_role("button", name=re.compile(r"Python 3 \(ipykernel\) \| Idle"))
    expect(idle).to_be_visible(timeout=APP_TIMEOUT_MS)
    editor = lab.locator(".jp-Notebook .jp-Cell").first.locator(".cm-content")
    editor.click()
    lab.keyboard.type("print(6 * 7)")
    expect(editor).to_have_text("print(6 * 7)")
    lab.keyboard.press("Shift+Enter")
    output = lab.locator(".jp-Notebook .jp-OutputArea-output").first
    expect(output).to_have_text("42", timeout=APP_TIMEOUT_MS)
    screenshot(lab, "session-jupyterlab-cell")
    kernel_socket = f"ws://127.0.0.1:{session_proxy.rsplit(':', 1)[1]}/s/{session.key}/api/kernels/"
    assert any(url.startswith(kernel_socket) for url in sockets), sockets
    assert session.app_token not in lab.content()
    assert all(session.app_token not in url for url in sockets)

    # Another user: the portal has no session for them, and the proxy refuses them even with a
    # cookie of their own for it (what a leaked sign-in link would have given them).
    erin = django_user_model.objects.create_user("erin", "erin@example.org", "erin-browser-pw")
    other = page_of()
    login(other, portal, username="erin", password="erin-browser-pw")
    answer = other.goto(portal.at(f"/sessions/{session.key}/open"))
    assert answer is not None and answer.status == 404
    other.context.add_cookies(
        [
            {
                "name": cookie_name(session.key),
                "value": cookie_value_make(key=session.key, user_id=erin.pk),
                "url": f"{session_proxy}/s/{session.key}/",
            }
        ]
    )
    refused = other.goto(f"{session_proxy}/s/{session.key}/lab")
    assert refused is not None and refused.status == 403


def test_tensorboard_on_a_project_folder_renders_through_the_proxy(
    sessions_portal,
    session_proxy,  # noqa: F811
    page,
):
    portal = sessions_portal
    login(page, portal)
    session = start_from_page(page, portal, "tensorboard", logdir="/project")
    assert session.logdir == "/project"
    wait_for_app(session_proxy, session, portal.user, "")

    board = open_in_new_tab(page, session)
    board.set_default_timeout(APP_TIMEOUT_MS)
    expect(board).to_have_url(re.compile(re.escape(f"{session_proxy}/s/{session.key}/")))
    expect(board).to_have_title("TensorBoard", timeout=APP_TIMEOUT_MS)
    # Rendered, not only served: its front end read its (empty) data through the proxy.
    expect(board.get_by_text("No dashboards are active")).to_be_visible(timeout=APP_TIMEOUT_MS)
    # Its data API, through the proxy with the browser's cookie: the folder it was given.
    environment = board.request.get(f"{session_proxy}/s/{session.key}/data/environment")
    assert environment.status == 200
    assert environment.json()["data_location"] == "/project"
    screenshot(board, "session-tensorboard")
