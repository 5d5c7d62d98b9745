"""The session proxy end to end: its ASGI app under uvicorn (a thread) in front of a real HTTP +
WebSocket echo server (aiohttp, host-side on 127.0.0.1), with the portal's database behind it.

The echo server keeps every request it got (method, path, headers) for the test to read, and
answers with its own cookies, a redirect and a header that echoes its Authorization, so the
header rules are checked in both directions. The real JupyterLab runs in the browser suite.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import socket
import ssl
import subprocess
import threading
import time
from datetime import timedelta
from pathlib import Path

import pytest
import requests
from aiohttp import WSMsgType, web
from django.utils import timezone
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import connect as ws_connect

from interactive.models import InteractiveSession
from interactive.proxy import gateway
from interactive.proxy.cookies import cookie_name
from interactive.proxy.serving import proxy_server_make
from interactive.tickets import ticket_make
from jobs.models import Job
from jobs.states import JobStatus

pytestmark = pytest.mark.django_db(transaction=True)
ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class EchoApp:
    """A tiny app in a thread of its own: what it was sent, it tells."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.loop = asyncio.new_event_loop()
        self.port = 0
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _record(self, request: web.Request) -> None:
        self.requests.append(
            {"method": request.method, "path": request.raw_path, "headers": dict(request.headers)}
        )

    async def _http(self, request: web.Request) -> web.StreamResponse:
        self._record(request)
        if request.headers.get("Upgrade", "").lower() == "websocket":
            ws = web.WebSocketResponse(max_msg_size=0)
            await ws.prepare(request)
            async for message in ws:
                if message.type == WSMsgType.TEXT and message.data == "close-me":
                    await ws.close(code=4001)
                elif message.type == WSMsgType.TEXT:
                    await ws.send_str(f"echo:{message.data}")
                elif message.type == WSMsgType.BINARY:
                    await ws.send_bytes(message.data[::-1])
            return ws
        if request.path.endswith("/redirect"):
            raise web.HTTPFound("/elsewhere")
        body = await request.read()
        response = web.json_response(
            {"method": request.method, "path": request.raw_path, "body_bytes": len(body)}
        )
        response.set_cookie("_xsrf", "app-cookie", path="/")
        # A careless app echoing what it was sent: the proxy must drop this header.
        response.headers["X-Echo-Authorization"] = request.headers.get("Authorization", "")
        return response

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        app = web.Application(client_max_size=1024**3)
        app.router.add_route("*", "/{tail:.*}", self._http)
        runner = web.AppRunner(app, access_log=None)
        self.loop.run_until_complete(runner.setup())
        site = web.TCPSite(runner, "127.0.0.1", 0)
        self.loop.run_until_complete(site.start())
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self._ready.set()
        self.loop.run_forever()
        self.loop.run_until_complete(runner.cleanup())

    def start(self) -> EchoApp:
        self._thread.start()
        assert self._ready.wait(10)
        return self

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)


@pytest.fixture(scope="module")
def echo():
    app = EchoApp().start()
    yield app
    app.stop()


@pytest.fixture(scope="module")
def proxy_url():
    server = proxy_server_make(host="127.0.0.1", port=0)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.started
    port = server.servers[0].sockets[0].getsockname()[1]
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(10)


@pytest.fixture
def session(submit, echo, settings):
    settings.PORTAL_BASE_URL = "http://portal.test"
    job = submit()
    Job.objects.filter(pk=job.pk).update(status=JobStatus.RUNNING)
    return InteractiveSession.objects.create(
        job=job,
        port=8888,
        upstream=f"127.0.0.1:{echo.port}",
        landing_path="lab",
        created_at=timezone.now(),
    )


def _signed_in(proxy_url: str, session, user) -> requests.Session:
    browser = requests.Session()
    ticket = ticket_make(key=session.key, user_id=user.pk)
    answer = browser.get(
        f"{proxy_url}/s/{session.key}/_portal/auth",
        params={"ticket": ticket},
        allow_redirects=False,
    )
    assert answer.status_code == 302, answer.text
    assert answer.headers["Location"] == f"/s/{session.key}/lab"
    set_cookie = answer.headers["Set-Cookie"]
    assert set_cookie.startswith(f"{cookie_name(session.key)}=")
    assert f"Path=/s/{session.key}/" in set_cookie and "HttpOnly" in set_cookie
    assert "SameSite=Lax" in set_cookie and "Secure" not in set_cookie
    return browser


def test_ticket_to_cookie_to_proxied_get_with_the_header_rules(proxy_url, echo, session, member):
    browser = _signed_in(proxy_url, session, member)
    # The portal's own cookies reach the proxy's host too (cookies ignore ports).
    browser.cookies.set("sessionid", "portal-session-secret")
    browser.cookies.set("csrftoken", "portal-csrf-secret")
    browser.cookies.set("theme", "dark")
    echo.requests.clear()

    answer = browser.get(
        f"{proxy_url}/s/{session.key}/lab/tree?x=1", headers={"Authorization": "Basic forged"}
    )
    assert answer.status_code == 200
    assert answer.json() == {
        "method": "GET",
        "path": f"/s/{session.key}/lab/tree?x=1",
        "body_bytes": 0,
    }

    (got,) = echo.requests
    sent = {name.lower(): value for name, value in got["headers"].items()}
    assert sent["authorization"] == f"token {session.app_token}"
    assert sent["cookie"] == "theme=dark"  # no portal cookie, no portal_s_* cookie
    assert sent["x-forwarded-for"] == "127.0.0.1" and sent["x-forwarded-proto"] == "http"
    assert sent["x-forwarded-host"] == proxy_url.removeprefix("http://")

    # The token never travels back; the app's cookie is held to the session's path.
    assert session.app_token not in answer.text
    assert all(session.app_token not in value for value in answer.headers.values())
    assert "x-echo-authorization" not in {name.lower() for name in answer.headers}
    assert answer.headers["Set-Cookie"].endswith(f"Path=/s/{session.key}/")
    assert "Path=/;" not in answer.headers["Set-Cookie"]

    # A POST body goes through; a redirect of the app stays under the session.
    posted = browser.post(f"{proxy_url}/s/{session.key}/api/contents", data=b"x" * 70_000)
    assert posted.json()["body_bytes"] == 70_000
    moved = browser.get(f"{proxy_url}/s/{session.key}/redirect", allow_redirects=False)
    assert moved.status_code == 302 and moved.headers["Location"] == "/elsewhere"


def test_strip_prefix_sends_the_path_below_the_session(proxy_url, echo, session, member):
    InteractiveSession.objects.filter(pk=session.pk).update(strip_prefix=True)
    browser = _signed_in(proxy_url, session, member)
    echo.requests.clear()
    answer = browser.get(f"{proxy_url}/s/{session.key}/static/a%2Fb.js")
    assert answer.json()["path"] == "/static/a%2Fb.js"
    moved = browser.get(f"{proxy_url}/s/{session.key}/redirect", allow_redirects=False)
    assert moved.headers["Location"] == f"/s/{session.key}/elsewhere"


def test_websocket_round_trip_and_activity_both_ways(proxy_url, echo, session, member):
    browser = _signed_in(proxy_url, session, member)
    cookie = f"{cookie_name(session.key)}={browser.cookies[cookie_name(session.key)]}"
    ws_url = proxy_url.replace("http://", "ws://") + f"/s/{session.key}/api/kernels/k1/ws"
    echo.requests.clear()
    headers = {"Cookie": cookie + "; sessionid=secret"}
    with ws_connect(ws_url, additional_headers=headers, max_size=None) as ws:
        ws.send("print(1)")
        assert ws.recv(timeout=5) == "echo:print(1)"
        ws.send(b"\x01\x02\x03")
        assert ws.recv(timeout=5) == b"\x03\x02\x01"
        big = "y" * (5 * 1024 * 1024)  # past aiohttp's 4 MiB default message bound
        ws.send(big)
        assert ws.recv(timeout=10) == "echo:" + big
        ws.send("close-me")  # the app's close code reaches the browser
        with pytest.raises(ConnectionClosed):
            ws.recv(timeout=5)
        assert ws.close_code == 4001
    (got,) = echo.requests
    sent = {name.lower(): value for name, value in got["headers"].items()}
    assert sent["authorization"] == f"token {session.app_token}"
    assert "sessionid" not in sent.get("cookie", "")
    session.refresh_from_db()
    assert session.last_activity_at is not None


def test_activity_is_recorded_at_most_every_30_s(proxy_url, session, member):
    browser = _signed_in(proxy_url, session, member)
    old = timezone.now() - timedelta(hours=2)
    InteractiveSession.objects.filter(pk=session.pk).update(last_activity_at=old)
    # The proxy's clock is per session key: this test's session has not been written yet.
    assert browser.get(f"{proxy_url}/s/{session.key}/lab").status_code == 200
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        session.refresh_from_db()
        if session.last_activity_at != old:
            break
        time.sleep(0.05)
    assert session.last_activity_at > old
    first = session.last_activity_at
    InteractiveSession.objects.filter(pk=session.pk).update(last_activity_at=old)
    assert browser.get(f"{proxy_url}/s/{session.key}/lab").status_code == 200
    time.sleep(0.3)
    session.refresh_from_db()
    assert session.last_activity_at == old, "written again within 30 s"
    assert first > old


def _activity_after(session, request) -> bool:
    """Whether ``request`` (a callable) records activity on ``session`` within a moment."""
    old = timezone.now() - timedelta(hours=2)
    InteractiveSession.objects.filter(pk=session.pk).update(last_activity_at=old)
    assert request().status_code == 200
    deadline = time.monotonic() + 0.5  # the write is a task of its own, done in milliseconds
    while time.monotonic() < deadline:
        session.refresh_from_db()
        if session.last_activity_at != old:
            return True
        time.sleep(0.05)
    return False


def test_polling_reads_of_an_open_tab_are_no_activity(proxy_url, session, member):
    browser = _signed_in(proxy_url, session, member)
    base = f"{proxy_url}/s/{session.key}"
    # JupyterLab's REST polls and TensorBoard's data reloads: not a user.
    assert not _activity_after(session, lambda: browser.get(f"{base}/api/kernels"))
    assert not _activity_after(session, lambda: browser.get(f"{base}/data/runs"))
    # A write through the same API is (a file saved, a kernel started).
    assert _activity_after(session, lambda: browser.post(f"{base}/api/kernels", data=b"{}"))


def test_another_user_is_refused_and_no_cookie_goes_to_the_portal(
    proxy_url, echo, session, member, outsider
):
    stranger = _signed_in(proxy_url, session, outsider)
    echo.requests.clear()
    refused = stranger.get(f"{proxy_url}/s/{session.key}/lab", headers={"Accept": "text/html"})
    assert refused.status_code == 403 and "may not open" in refused.text
    assert stranger.get(f"{proxy_url}/s/{session.key}/api/x").json()["status"] == 403
    ws_url = proxy_url.replace("http://", "ws://") + f"/s/{session.key}/api/kernels/k1/ws"
    cookie = f"{cookie_name(session.key)}={stranger.cookies[cookie_name(session.key)]}"
    with pytest.raises(InvalidStatus) as refused_ws:
        ws_connect(ws_url, additional_headers={"Cookie": cookie}).close()
    assert refused_ws.value.response.status_code == 403
    assert echo.requests == []

    # A cookie made for one session does not open another.
    value = stranger.cookies[cookie_name(session.key)]
    other_key = "another-session-key123"
    moved = requests.get(f"{proxy_url}/s/{other_key}/api", cookies={cookie_name(other_key): value})
    assert moved.status_code == 401

    anonymous = requests.Session()
    page = anonymous.get(
        f"{proxy_url}/s/{session.key}/lab", headers={"Accept": "text/html"}, allow_redirects=False
    )
    assert page.status_code == 302
    assert page.headers["Location"] == f"http://portal.test/sessions/{session.key}/open"
    api = anonymous.get(f"{proxy_url}/s/{session.key}/api/kernels", allow_redirects=False)
    assert api.status_code == 401
    with pytest.raises(InvalidStatus):
        ws_connect(ws_url).close()
    assert echo.requests == []


def test_forged_expired_and_foreign_tickets_are_refused(proxy_url, session, member, monkeypatch):
    url = f"{proxy_url}/s/{session.key}/_portal/auth"
    forged = ticket_make(key=session.key, user_id=member.pk)[:-2] + "xx"
    foreign = ticket_make(key="another-session-key123", user_id=member.pk)
    for ticket in (forged, foreign, ""):
        answer = requests.get(url, params={"ticket": ticket}, allow_redirects=False)
        assert answer.status_code == 403 and "Set-Cookie" not in answer.headers
    real_time = time.time
    monkeypatch.setattr(time, "time", lambda: real_time() - 120)
    expired = ticket_make(key=session.key, user_id=member.pk)
    monkeypatch.setattr(time, "time", real_time)
    answer = requests.get(url, params={"ticket": expired}, allow_redirects=False)
    assert answer.status_code == 403 and "Set-Cookie" not in answer.headers
    # A forged cookie is no cookie.
    forged_cookie = {cookie_name(session.key): "1:forged"}
    api = requests.get(f"{proxy_url}/s/{session.key}/api", cookies=forged_cookie)
    assert api.status_code == 401


def test_a_session_not_running_or_not_answering(proxy_url, session, member, monkeypatch):
    monkeypatch.setattr(gateway, "ACCESS_CACHE_S", 0.2)  # the access answers' reuse, shortened
    browser = _signed_in(proxy_url, session, member)
    # Not answering (nothing listens there yet): a clear 502, in JSON and for a page.
    InteractiveSession.objects.filter(pk=session.pk).update(upstream="127.0.0.1:9")
    gateway_wait = time.monotonic() + gateway.ACCESS_CACHE_S + 0.5
    while time.monotonic() < gateway_wait:
        answer = browser.get(f"{proxy_url}/s/{session.key}/api/status")
        if answer.status_code != 200:
            break
        time.sleep(0.2)
    assert answer.status_code == 502 and "starting" in answer.json()["error"]
    page = browser.get(f"{proxy_url}/s/{session.key}/lab", headers={"Accept": "text/html"})
    assert page.status_code == 502 and "<html>" in page.text

    Job.objects.filter(pk=session.job_id).update(status=JobStatus.FINISHED)
    deadline = time.monotonic() + gateway.ACCESS_CACHE_S + 0.5
    while time.monotonic() < deadline:
        answer = browser.get(f"{proxy_url}/s/{session.key}/api/status")
        if answer.status_code == 503:
            break
        time.sleep(0.2)
    assert answer.status_code == 503
    assert json.loads(answer.text)["error"].startswith("This session is not running")


def test_bodies_over_the_bound_are_refused(proxy_url, session, member, monkeypatch):
    browser = _signed_in(proxy_url, session, member)
    monkeypatch.setattr(gateway, "MAX_BODY_BYTES", 1000)
    answer = browser.post(f"{proxy_url}/s/{session.key}/api/contents", data=b"z" * 2000)
    assert answer.status_code == 413

    def chunks():
        for _ in range(4):
            yield b"z" * 500

    answer = browser.post(f"{proxy_url}/s/{session.key}/api/contents", data=chunks())
    assert answer.status_code == 413


NGINX = shutil.which("nginx") or "/usr/sbin/nginx"


@pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")
def test_through_the_shipped_nginx_template_with_websocket_upgrade(
    proxy_url, echo, session, member, tmp_path
):
    """deploy/nginx/gpuportal-sessions.conf.template, rendered and run: TLS, HTTP and a
    WebSocket upgrade reach the proxy, which is told the request came over https."""
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
         "/CN=sessions.test", "-keyout", tmp_path / "key.pem", "-out", tmp_path / "cert.pem"],
        check=True, capture_output=True,
    )  # fmt: skip
    port = _free_port()
    template = ROOT / "deploy" / "nginx" / "gpuportal-sessions.conf.template"
    conf = template.read_text()
    for name, value in {
        "LISTEN": f"127.0.0.1:{port}",
        "SESSIONS_SERVER_NAME": "sessions.test",
        "SERVER_CERT": str(tmp_path / "cert.pem"),
        "SERVER_KEY": str(tmp_path / "key.pem"),
        "SESSIONS_UPSTREAM": proxy_url.removeprefix("http://"),
        "SESSIONS_MAX_BODY": "1m",
    }.items():
        conf = "\n".join(
            line if line.lstrip().startswith("#") else line.replace(f"@{name}@", value)
            for line in conf.splitlines()
        )
    assert "@" not in "\n".join(x for x in conf.splitlines() if not x.lstrip().startswith("#"))
    conf = conf.replace("/var/log/nginx/", f"{tmp_path}/")
    (tmp_path / "sessions.conf").write_text(conf)
    (tmp_path / "nginx.conf").write_text(
        f"pid {tmp_path}/nginx.pid; error_log {tmp_path}/error.log warn; daemon off;\n"
        "events { worker_connections 64; }\n"
        f"http {{ access_log off; client_body_temp_path {tmp_path}/body; "
        f"proxy_temp_path {tmp_path}/proxy; include {tmp_path}/sessions.conf; }}\n"
    )
    nginx = subprocess.Popen(
        [NGINX, "-p", str(tmp_path), "-c", str(tmp_path / "nginx.conf")],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        base = f"https://127.0.0.1:{port}"
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert nginx.poll() is None, nginx.stderr.read() if nginx.stderr else ""
                time.sleep(0.05)
        browser = _signed_in(proxy_url, session, member)
        value = browser.cookies[cookie_name(session.key)]
        echo.requests.clear()
        answer = requests.get(
            f"{base}/s/{session.key}/lab", cookies={cookie_name(session.key): value}, verify=False
        )
        assert answer.status_code == 200 and answer.json()["path"] == f"/s/{session.key}/lab"
        assert echo.requests[-1]["headers"]["X-Forwarded-Proto"] == "https"
        tls = ssl.create_default_context()
        tls.check_hostname, tls.verify_mode = False, ssl.CERT_NONE
        with ws_connect(
            f"wss://127.0.0.1:{port}/s/{session.key}/terminals/websocket/1",
            additional_headers={"Cookie": f"{cookie_name(session.key)}={value}"},
            ssl=tls,
        ) as ws:
            ws.send("ls")
            assert ws.recv(timeout=5) == "echo:ls"
        # The sign-in line is logged without its ticket.
        ticket = ticket_make(key=session.key, user_id=member.pk)
        signed = requests.get(
            f"{base}/s/{session.key}/_portal/auth?ticket={ticket}",
            allow_redirects=False,
            verify=False,
        )
        assert signed.status_code == 302
        assert "Secure" not in signed.headers["Set-Cookie"]  # PORTAL_SESSION_PROXY_URL is http
    finally:
        nginx.terminate()
        nginx.wait(timeout=10)
    logged = (tmp_path / "gpuportal-sessions.log").read_text()
    assert f"/s/{session.key}/_portal/auth" in logged and ticket.split(":")[0] not in logged
