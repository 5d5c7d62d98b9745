"""``manage.py session_proxy`` as the process it runs as (make run, systemd): it answers, its
logs carry no ticket, cookie or token, and SIGTERM stops it within 20 s. Also the settings
check that keeps it off the portal's own origin."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect as ws_connect

from interactive.proxy.checks import session_proxy_settings_check

ROOT = Path(__file__).resolve().parents[2]
LIMIT_S = 20


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _get(url: str, headers: dict | None = None) -> int:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=5) as answer:
            return answer.status
    except urllib.error.HTTPError as error:
        return error.code


def test_the_process_answers_logs_no_secret_and_stops_on_sigterm(tmp_path):
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PORTAL_")}
    env.update(
        PORTAL_VAR_DIR=str(tmp_path / "var"),
        PORTAL_SESSION_PROXY_BIND=f"127.0.0.1:{port}",
        PORTAL_SESSION_PROXY_URL=f"http://127.0.0.1:{port}",
        PYTHONUNBUFFERED="1",
    )
    log = tmp_path / "proxy.log"
    with open(log, "wb") as out:
        child = subprocess.Popen(
            [sys.executable, "manage.py", "session_proxy"],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                if _get(f"{base}/_health") == 200:
                    break
            except OSError:
                time.sleep(0.1)
        assert _get(f"{base}/_health") == 200

        key = "AbCdEfGhIjKlMnOpQrStUv"
        ticket = "eyJrIjoiQWJDZCJ9:SECRET-TICKET-1:sig"
        assert _get(f"{base}/s/{key}/_portal/auth?ticket={ticket}") == 403
        cookie = f"portal_s_{key}=SECRET-COOKIE-2; sessionid=SECRET-COOKIE-3"
        assert _get(f"{base}/s/{key}/api/kernels?token=SECRET-TOKEN-4", {"Cookie": cookie}) == 401
        with pytest.raises(InvalidStatus):
            ws_connect(
                f"ws://127.0.0.1:{port}/s/{key}/api/kernels/1/channels?token=SECRET-TOKEN-5",
                additional_headers={"Cookie": cookie},
            ).close()
        assert _get(f"{base}/elsewhere") == 404

        # A connection kept open (a browser's keep-alive) does not hold the stop up.
        held = socket.create_connection(("127.0.0.1", port))
        began = time.monotonic()
        child.send_signal(signal.SIGTERM)
        child.wait(timeout=LIMIT_S)
        took = time.monotonic() - began
        held.close()
        assert took < LIMIT_S
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait(timeout=10)

    text = log.read_text()
    assert f"/s/{key}/_portal/auth 403" in text, text  # the proxy's own line, query-less
    assert "Session proxy on" in text
    assert "SECRET" not in text, text


@pytest.mark.parametrize(
    ("proxy_url", "base_url", "error"),
    [
        ("http://127.0.0.1:8001", "http://127.0.0.1:8000", None),
        ("https://sessions.gpu.example.org", "https://gpu.example.org", None),
        ("http://127.0.0.1:8000", "http://127.0.0.1:8000", "interactive.E102"),
        ("https://gpu.example.org", "https://GPU.example.org:443/", "interactive.E102"),
        ("ftp://sessions.example.org", "https://gpu.example.org", "interactive.E101"),
        ("", "https://gpu.example.org", "interactive.E101"),
    ],
)
def test_check_refuses_the_portals_own_origin(settings, proxy_url, base_url, error):
    settings.PORTAL_SESSION_PROXY_URL = proxy_url
    settings.PORTAL_BASE_URL = base_url
    settings.PORTAL_SESSION_PROXY_BIND = "127.0.0.1:8001"
    ids = [e.id for e in session_proxy_settings_check(None)]
    assert ids == ([error] if error else [])


def test_check_refuses_a_bind_without_a_port(settings):
    settings.PORTAL_SESSION_PROXY_BIND = "127.0.0.1"
    assert [e.id for e in session_proxy_settings_check(None)] == ["interactive.E103"]
