"""Sessions end to end on the real images (scripts/build-session-images.sh): a JupyterLab
session started through the portal's REST API runs as an interactive job on the local Docker
engine with no host port published, answers through the real session proxy (uvicorn in a
thread), runs code in a kernel over the proxied WebSocket, refuses another user with 403, and
stops through GPULab's halt; another is extended (its end moves) and then idles into a cull,
warned first (history, page banner, mail). The browser drives the same apps in
tests/browser/test_sessions.py, which reuses this module's fixtures."""

from __future__ import annotations

import json
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import pytest
import requests
from django.core import mail
from django.test import Client
from websockets.sync.client import connect as ws_connect

from clusters.runtime.errors import RuntimeFailure
from clusters.services import engine_for
from interactive.lifecycle import Kind, sessions_police
from interactive.models import InteractiveSession
from interactive.proxy.cookies import cookie_name
from interactive.proxy.serving import proxy_server_make
from interactive.tickets import ticket_make
from jobs.execution.container_spec import LABEL_INSTANCE
from jobs.models import Job
from tests.integration.docker_support import docker_url
from tests.integration.test_jobs_e2e import (  # noqa: F401 (fixtures)
    local,
    people,
    runtime,
    wait_for,
    watcher,
)

pytestmark = [pytest.mark.docker, pytest.mark.django_db(transaction=True)]

APP_TIMEOUT_S = 90  # a cold JupyterLab on a busy 2-core CI machine


@pytest.fixture(scope="module")
def session_proxy():
    """The session proxy (interactive.proxy.serving, as ``manage.py session_proxy`` runs it) on
    a free port in a thread of the test process: it reads the test's database."""
    server = proxy_server_make(host="127.0.0.1", port=0)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.started, "the session proxy did not start"
    port = server.servers[0].sockets[0].getsockname()[1]
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(10)


@dataclass(frozen=True)
class Site:
    proxy: str  # the session proxy's origin
    owner: Any  # a member of ``project``, with an e-mail address
    project: Any


@pytest.fixture
def sessions_site(
    session_images,
    people,  # noqa: F811
    local,  # noqa: F811
    watcher,  # noqa: F811
    session_proxy,
    seeded_templates,
    settings,
) -> Iterator[Site]:
    """Everything a real session needs: the images, the local engine as a watched slave, the
    seeded templates, the proxy, and the portal sending browsers to it."""
    watcher()
    settings.PORTAL_SESSION_PROXY_URL = session_proxy
    settings.PORTAL_BASE_URL = ""
    owner, project = people
    yield Site(proxy=session_proxy, owner=owner, project=project)
    # A test that failed half-way leaves its session running: its containers go with it.
    with engine_for(local) as engine:
        for container in engine.list_by_labels({LABEL_INSTANCE: settings.PORTAL_INSTANCE}):
            try:
                engine.remove(container.id)
            except RuntimeFailure:  # the job's own finish is removing it already
                pass


def signed_in(proxy_url: str, session: InteractiveSession, user) -> requests.Session:
    """A client of the proxy holding ``user``'s cookie for the session, got as a browser gets
    it: the portal's ticket, exchanged at the proxy's sign-in hand-off."""
    client = requests.Session()
    ticket = ticket_make(key=session.key, user_id=user.pk)
    answer = client.get(
        f"{proxy_url}{session.prefix}_portal/auth", params={"ticket": ticket}, allow_redirects=False
    )
    assert answer.status_code == 302, answer.text
    assert client.cookies.get(cookie_name(session.key)), answer.headers
    return client


def wait_answer(client: requests.Session, url: str, timeout: float = APP_TIMEOUT_S):
    """GET ``url`` until the app answers (the proxy says 502 while it does not listen yet)."""
    deadline, answer = time.monotonic() + timeout, None
    while time.monotonic() < deadline:
        answer = client.get(url, allow_redirects=False, timeout=10)
        if answer.status_code not in (502, 503):
            return answer
        time.sleep(0.25)
    raise AssertionError(f"{url} kept answering {answer.status_code if answer else None}")


def start_by_rest(user, template: str, **body) -> InteractiveSession:
    portal = Client()
    portal.force_login(user)
    answer = portal.post(
        "/api/portal/sessions",
        data=json.dumps({"template": template, "gpus": 0, **body}),
        content_type="application/json",
    )
    assert answer.status_code == 201, answer.content
    key = answer.json()["key"]
    session = InteractiveSession.objects.select_related("job").get(key=key)
    job = wait_for(session.job, "RUNNING", "FAILED", timeout=60)
    assert job.status == "RUNNING", job.end_reason
    session.refresh_from_db()
    assert session.upstream.endswith(f":{session.port}"), session.upstream
    return session


def docker_inspect(container_id: str) -> dict:
    out = subprocess.run(
        ["docker", "-H", docker_url(), "inspect", container_id],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return json.loads(out)[0]


def kernel_run(proxy_url: str, client: requests.Session, key: str, code: str) -> str:
    """Start a kernel through the proxy, run ``code`` over its WebSocket (Jupyter's messaging
    protocol, JSON frames) and answer what it printed."""
    prefix = f"{proxy_url}/s/{key}/"
    kernel = client.post(f"{prefix}api/kernels", json={"name": "python3"}, timeout=30)
    assert kernel.status_code == 201, kernel.text
    kernel_id = kernel.json()["id"]
    cookie = f"{cookie_name(key)}={client.cookies.get(cookie_name(key))}"
    ws_url = prefix.replace("http://", "ws://") + f"api/kernels/{kernel_id}/channels"
    msg_id, printed = uuid.uuid4().hex, []
    with ws_connect(
        f"{ws_url}?session_id={uuid.uuid4().hex}",
        additional_headers={"Cookie": cookie},
        open_timeout=30,
    ) as ws:
        ws.send(
            json.dumps(
                {
                    "header": {
                        "msg_id": msg_id,
                        "session": uuid.uuid4().hex,
                        "username": "e2e",
                        "msg_type": "execute_request",
                        "version": "5.3",
                        "date": datetime.now().isoformat(),
                    },
                    "parent_header": {},
                    "metadata": {},
                    "content": {
                        "code": code,
                        "silent": False,
                        "store_history": False,
                        "user_expressions": {},
                        "allow_stdin": False,
                        "stop_on_error": True,
                    },
                    "channel": "shell",
                    "buffers": [],
                }
            )
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            message = json.loads(ws.recv(timeout=60))
            if message.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind = message["header"]["msg_type"]
            if kind == "stream":
                printed.append(message["content"]["text"])
            elif kind == "error":
                raise AssertionError(message["content"])
            elif kind == "status" and message["content"]["execution_state"] == "idle":
                break
    return "".join(printed)


def test_jupyterlab_runs_code_through_the_proxy_and_refuses_others(
    sessions_site, django_user_model
):
    proxy, owner = sessions_site.proxy, sessions_site.owner
    session = start_by_rest(owner, "jupyterlab")
    job = session.job

    # No host port: nothing published, nothing bound; only the bridge address serves it.
    state = docker_inspect(job.container_id)
    assert not state["HostConfig"]["PortBindings"], state["HostConfig"]["PortBindings"]
    assert not any(state["NetworkSettings"]["Ports"].values()), state["NetworkSettings"]["Ports"]
    assert job.port_mappings == []
    assert session.upstream.split(":")[0] == state["NetworkSettings"]["IPAddress"]

    browser = signed_in(proxy, session, owner)
    lab = wait_answer(browser, f"{proxy}{session.prefix}lab")
    assert lab.status_code == 200 and "JupyterLab" in lab.text, lab.text[:500]
    assert session.app_token not in lab.text

    assert kernel_run(proxy, browser, session.key, "print(6 * 7)") == "42\n"

    # Another user: the portal does not hand them a ticket, and a cookie of their own (as a
    # leaked link would give) is refused by the proxy on every request and WebSocket.
    stranger = django_user_model.objects.create_user("erin", "erin@example.org", "pw")
    portal = Client()
    portal.force_login(stranger)
    assert portal.get(f"/sessions/{session.key}/open").status_code == 404
    assert portal.get(f"/api/portal/sessions/{session.key}").status_code == 404
    intruder = signed_in(proxy, session, stranger)
    refused = intruder.get(f"{proxy}{session.prefix}lab", allow_redirects=False)
    assert refused.status_code == 403
    assert intruder.get(f"{proxy}{session.prefix}api/kernels").status_code == 403
    assert session.app_token not in refused.text

    # Stop: GPULab's halt (SIGUSR1 through tini to the halt wrapper: JupyterLab stops, 123).
    stop = Client()
    stop.force_login(owner)
    assert stop.delete(f"/api/portal/sessions/{session.key}").status_code in (200, 202)
    job = wait_for(job, "HALTED", "FAILED", "FINISHED", timeout=60)
    assert (job.status, job.exit_code) == ("HALTED", 123), job.end_reason
    session.refresh_from_db()
    assert session.upstream == ""
    deadline = time.monotonic() + 15  # the proxy's access cache holds 5 s
    while browser.get(f"{proxy}{session.prefix}lab").status_code != 503:
        assert time.monotonic() < deadline, "the proxy still forwards to a halted session"
        time.sleep(0.5)


def test_a_session_is_extended_then_idles_into_a_cull_warned_first(sessions_site, settings):
    settings.PORTAL_SESSION_IDLE_SECONDS = 8
    settings.PORTAL_SESSION_WARN_SECONDS = 4
    settings.PORTAL_SESSION_EXTEND_SECONDS = 1800
    proxy, owner = sessions_site.proxy, sessions_site.owner
    session = start_by_rest(owner, "jupyterlab")
    portal = Client()
    portal.force_login(owner)

    before = portal.get(f"/api/portal/sessions/{session.key}").json()
    assert before["extensions"] == 0 and before["ends_at"]
    extended = portal.post(f"/api/portal/sessions/{session.key}/extend")
    assert extended.status_code == 200, extended.content
    after = extended.json()
    moved = datetime.fromisoformat(after["ends_at"]) - datetime.fromisoformat(before["ends_at"])
    assert moved == timedelta(seconds=1800)
    assert after["extensions"] == 1
    job = Job.objects.get(pk=session.job_id)
    assert job.max_duration_s == 4 * 3600 + 1800

    # Used once through the proxy, then left alone.
    browser = signed_in(proxy, session, owner)
    assert wait_answer(browser, f"{proxy}{session.prefix}lab").status_code == 200

    kinds: list[tuple[Kind, float]] = []
    deadline = time.monotonic() + 60
    while not any(kind == Kind.CULL_IDLE for kind, _ in kinds):
        assert time.monotonic() < deadline, f"no cull within a minute: {kinds}"
        for action in sessions_police():
            kinds.append((action.kind, time.monotonic()))
            if action.kind == Kind.WARN_IDLE:
                page = portal.get("/sessions/").content.decode()
                assert 'data-session-banner="idle"' in page
        time.sleep(0.5)
    (warned_at,) = [t for kind, t in kinds if kind == Kind.WARN_IDLE]
    (culled_at,) = [t for kind, t in kinds if kind == Kind.CULL_IDLE]
    assert culled_at - warned_at >= 4 - 0.5  # the warning's full notice (one sweep's slack)

    job = wait_for(job, "HALTED", "FAILED", "FINISHED", timeout=60)
    assert (job.status, job.exit_code) == ("HALTED", 123), job.end_reason
    history = [e.message for e in job.events.order_by("time", "id")]
    warning = next(i for i, m in enumerate(history) if m.startswith("session warning: idle"))
    cull = next(i for i, m in enumerate(history) if "culled: no activity" in m)
    assert warning < cull, history
    assert any("session extended by" in m for m in history[:warning]), history
    assert [m.to for m in mail.outbox] == [[owner.email]]
    assert "culled" in mail.outbox[0].body
