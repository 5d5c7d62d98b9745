"""The session proxy's ASGI application: the portal's checks around asgiproxy.

Routes (all under the proxy's own origin, PORTAL_SESSION_PROXY_URL):

- ``/s/<key>/_portal/auth?ticket=…``: the portal's sign-in hand-off (interactive.tickets) becomes
  the proxy's cookie for ``/s/<key>/``, then a redirect to the app's landing page.
- ``/s/<key>/…`` (HTTP and WebSocket): cookie → user → ``session_upstream_for`` (cached a few
  seconds) → forwarded by asgiproxy to the container's bridge address, with the header rules of
  interactive.proxy.headers; refused with 401/403/404/503, or 502 while the app does not answer.
- ``/_health``: 200, for the process supervisor and the tests.

The logs carry the method, the path without its query (where tickets and app tokens travel),
the status and the user id: never a ticket, a cookie or a token.
"""

from __future__ import annotations

import asyncio
import html
import json
import logging
import re
import time
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, quote

import aiohttp
from aiohttp import WSMsgType
from asgiproxy.config import ProxyConfig
from asgiproxy.context import ProxyContext
from asgiproxy.proxies.http import proxy_http
from asgiproxy.proxies.websocket import WebSocketProxyContext
from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import close_old_connections
from django.utils import timezone
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.websockets import WebSocket
from yarl import URL

from interactive.access import (
    NO_SUCH_SESSION,
    NOT_ALLOWED,
    NOT_RUNNING,
    Upstream,
    session_activity_record,
    session_upstream_for,
)
from interactive.models import InteractiveSession
from interactive.proxy.cookies import cookie_header_make, cookie_user_read
from interactive.proxy.headers import request_headers_for_upstream, response_headers_for_browser
from interactive.tickets import ticket_read

log = logging.getLogger("interactive.proxy")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

KEY_PATH = re.compile(r"^/s/(?P<key>[A-Za-z0-9_-]{1,64})(?P<rest>/.*)?$")
AUTH_PATH = "/_portal/auth"
UPSTREAM_SCOPE_KEY = "gpuportal.upstream"
# One answer of session_upstream_for is reused this long per (key, user): a user removed from a
# share loses access within it, and a page's burst of requests costs one query.
ACCESS_CACHE_S = 5.0
ACCESS_CACHE_MAX = 10_000
# Activity is written at most this often per session (the lifecycle's idle rule needs minutes).
ACTIVITY_EVERY_S = 30.0
# Reads an open but untouched tab repeats by itself, which are no sign of a user: JupyterLab
# polls its REST API (kernels, sessions, terminals, the file browser's listing) every few
# seconds and TensorBoard reloads its data every 30 s. A GET or HEAD under these paths of the app
# is not activity; a page, any write, and WebSocket messages either way (a cell run, a kernel's
# output, a terminal) are.
POLLING_PREFIXES = ("api/", "data/")
# Bounds: a request body (JupyterLab uploads large files in 1 MiB chunks), one WebSocket message
# either way (a notebook's output with images), how long the app may take to accept a connection.
MAX_BODY_BYTES = 256 * 1024 * 1024
WS_MAX_MESSAGE_BYTES = 64 * 1024 * 1024
CONNECT_TIMEOUT_S = 5.0
MAX_CONCURRENT_REQUESTS = 512

REFUSALS = {
    NO_SUCH_SESSION: (404, "There is no such session."),
    NOT_ALLOWED: (403, "You may not open this session."),
    NOT_RUNNING: (503, "This session is not running (it has not started yet, or it has ended)."),
}


class BodyTooLarge(Exception):
    pass


# --- Answers of the proxy itself ------------------------------------------------------------


def _wants_html(scope: Scope) -> bool:
    accept = Headers(scope=scope).get("accept", "")
    return scope.get("method") == "GET" and "text/html" in accept


async def _answer(
    send: Send,
    status: int,
    body: bytes,
    *,
    content_type: str,
    extra: list[tuple[str, str]] | None = None,
) -> None:
    headers = [
        (b"content-type", content_type.encode()),
        (b"content-length", str(len(body)).encode()),
        (b"cache-control", b"no-store"),
    ]
    headers += [(name.encode("latin-1"), value.encode("latin-1")) for name, value in extra or []]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _explain(scope: Scope, send: Send, status: int, message: str) -> None:
    """A short HTML page for a browser, JSON for anything else (a notebook's fetch)."""
    if _wants_html(scope):
        page = (
            "<!doctype html><html><head><meta charset='utf-8'><title>GPU Portal session</title>"
            "</head><body style='font-family:sans-serif;margin:3em'>"
            f"<h1>{status}</h1><p>{html.escape(message)}</p>"
            f"<p><a href='{html.escape(settings.PORTAL_BASE_URL)}/'>Back to the portal</a></p>"
            "</body></html>"
        )
        await _answer(send, status, page.encode(), content_type="text/html; charset=utf-8")
    else:
        body = json.dumps({"error": message, "status": status}).encode()
        await _answer(send, status, body, content_type="application/json")


async def _redirect(send: Send, location: str, extra: list[tuple[str, str]] | None = None) -> None:
    await _answer(
        send,
        302,
        b"",
        content_type="text/plain",
        extra=[("location", location), *(extra or [])],
    )


def _is_polling(scope: Scope, rest: str) -> bool:
    """A read an open tab repeats by itself (POLLING_PREFIXES)."""
    return scope.get("method") in ("GET", "HEAD") and rest.lstrip("/").startswith(POLLING_PREFIXES)


# --- asgiproxy, told where each request goes ------------------------------------------------


class SessionUpstreamConfig(ProxyConfig):
    """asgiproxy's configuration, read per request from the Upstream the access check put in
    the scope: the container's address, the prefix rule, the app's token."""

    def get_upstream_url(self, *, scope: Scope) -> str:
        upstream: Upstream = scope[UPSTREAM_SCOPE_KEY]
        # The path as the browser encoded it: a notebook named "a%2Fb" stays one name.
        raw = scope.get("raw_path")
        path = raw.decode("latin-1") if raw else quote(scope["path"])
        if not path.startswith(upstream.prefix):
            path = quote(scope["path"])
        if upstream.strip_prefix:
            path = path[len(upstream.prefix) - 1 :] or "/"
        return f"http://{upstream.address}{path}"

    def process_client_headers(self, *, scope: Scope, headers: Headers) -> Headers:
        upstream: Upstream = scope[UPSTREAM_SCOPE_KEY]
        client = scope.get("client") or ("", 0)
        pairs = request_headers_for_upstream(
            headers.raw,
            app_token=upstream.app_token,
            client_host=str(client[0]),
            scheme="https" if scope.get("scheme") in ("https", "wss") else "http",
            websocket=scope["type"] == "websocket",
        )
        return Headers(raw=[(k.encode("latin-1"), v.encode("latin-1")) for k, v in pairs])

    def process_upstream_headers(
        self, *, scope: Scope, proxy_response: aiohttp.ClientResponse
    ) -> Headers:
        upstream: Upstream = scope[UPSTREAM_SCOPE_KEY]
        pairs = response_headers_for_browser(
            proxy_response.headers.items(),
            prefix=upstream.prefix,
            strip_prefix=upstream.strip_prefix,
            address=upstream.address,
            app_token=upstream.app_token,
        )
        return Headers(raw=[(k.encode("latin-1"), v.encode("latin-1")) for k, v in pairs])

    def get_upstream_http_options(self, *, scope: Scope, client_request: Request, data) -> dict:
        options = super().get_upstream_http_options(
            scope=scope, client_request=client_request, data=data
        )
        options["url"] = URL(options["url"], encoded=True)
        return options

    def get_upstream_websocket_options(self, *, scope: Scope, client_ws: WebSocket) -> dict:
        options = super().get_upstream_websocket_options(scope=scope, client_ws=client_ws)
        options["url"] = URL(options["url"], encoded=True)
        options["max_msg_size"] = WS_MAX_MESSAGE_BYTES
        return options


class SessionProxyContext(ProxyContext):
    """asgiproxy's context with the proxy's bounds: a connect timeout (an app not yet up is a
    502 within seconds), no overall timeout (long polls, downloads), no cookie jar."""

    @property
    def session(self) -> aiohttp.ClientSession:
        if not self._session:
            self._session = aiohttp.ClientSession(
                cookie_jar=aiohttp.DummyCookieJar(),
                auto_decompress=False,
                timeout=aiohttp.ClientTimeout(
                    total=None, sock_connect=CONNECT_TIMEOUT_S, connect=CONNECT_TIMEOUT_S * 2
                ),
            )
        return self._session


class SessionWebSocketPump(WebSocketProxyContext):
    """asgiproxy's two-way pump, ending cleanly when the app closes or fails its side (the
    library's loop treats an upstream close frame or error as an unknown message)."""

    async def upstream_to_client_loop(self):
        while True:
            message = await self.upstream_ws.receive()
            if message.type in (WSMsgType.CLOSE, WSMsgType.CLOSING, WSMsgType.CLOSED):
                return
            if message.type == WSMsgType.ERROR:
                log.info("session websocket: the app's side failed")
                return
            try:
                await self.send_upstream_to_client(upstream_msg=message)
            except Exception:  # the browser went away meanwhile
                return

    async def client_to_upstream_loop(self):
        while True:
            message = await self.client_ws.receive()
            if message["type"] == "websocket.disconnect":
                return
            if message.get("text") is not None:
                await self.upstream_ws.send_str(message["text"])
            elif message.get("bytes") is not None:
                await self.upstream_ws.send_bytes(message["bytes"])

    async def loop(self):
        tasks = [
            asyncio.create_task(self.client_to_upstream_loop()),
            asyncio.create_task(self.upstream_to_client_loop()),
        ]
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)


# --- The application ------------------------------------------------------------------------


@dataclass
class _Cached:
    until: float
    answer: Upstream | str


def _upstream_lookup(key: str, user_id: int) -> Upstream | str:
    close_old_connections()  # a long-lived process: a connection the database dropped is renewed
    return session_upstream_for(key=key, user_id=user_id)


def _landing_lookup(key: str) -> str | None:
    close_old_connections()
    return InteractiveSession.objects.filter(key=key).values_list("landing_path", flat=True).first()


def _activity_write(key: str) -> None:
    close_old_connections()
    session_activity_record(key=key, at=timezone.now())


class SessionProxy:
    """The ASGI application ``manage.py session_proxy`` serves."""

    def __init__(self) -> None:
        self.context = SessionProxyContext(
            SessionUpstreamConfig(), max_concurrency=MAX_CONCURRENT_REQUESTS
        )
        self._access: dict[tuple[str, int], _Cached] = {}
        self._activity_at: dict[str, float] = {}
        self._background: set[asyncio.Task] = set()

    # Access, cached per (key, user) -------------------------------------------------------

    async def upstream_for(self, key: str, user_id: int) -> Upstream | str:
        now = time.monotonic()
        cached = self._access.get((key, user_id))
        if cached is not None and cached.until > now:
            return cached.answer
        answer = await sync_to_async(_upstream_lookup)(key, user_id)
        if len(self._access) >= ACCESS_CACHE_MAX:
            self._access = {k: v for k, v in self._access.items() if v.until > now}
            if len(self._access) >= ACCESS_CACHE_MAX:
                self._access.clear()
        self._access[(key, user_id)] = _Cached(until=now + ACCESS_CACHE_S, answer=answer)
        return answer

    def activity(self, key: str) -> None:
        """Note use of session ``key``: written at most every 30 s, off the request's path."""
        now = time.monotonic()
        if now - self._activity_at.get(key, -ACTIVITY_EVERY_S) < ACTIVITY_EVERY_S:
            return
        self._activity_at[key] = now
        task = asyncio.get_running_loop().create_task(self._activity_write(key))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _activity_write(self, key: str) -> None:
        try:
            await sync_to_async(_activity_write)(key)
        except Exception:
            log.exception("session %s: activity not recorded", key)
            self._activity_at.pop(key, None)

    # ASGI ----------------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] not in ("http", "websocket"):
            return
        status = await self._handle(scope, receive, send)
        user = scope.get("gpuportal.user", "-")
        kind = "WS" if scope["type"] == "websocket" else scope.get("method", "")
        log.info("%s %s %s user=%s", kind, scope.get("path", ""), status, user)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await asyncio.gather(*self._background, return_exceptions=True)
                await self.context.close()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _handle(self, scope: Scope, receive: Receive, send: Send) -> int:
        websocket = scope["type"] == "websocket"
        path = scope["path"]
        if path == "/_health" and not websocket:
            await _answer(send, 200, b"ok\n", content_type="text/plain")
            return 200
        match = KEY_PATH.match(path)
        if match is None:
            return await self._refuse(scope, send, 404, "Not found.")
        key, rest = match["key"], match["rest"]
        if rest is None and not websocket:
            await _redirect(send, f"/s/{key}/")
            return 302
        if rest == AUTH_PATH and not websocket:
            return await self._sign_in(scope, send, key)

        user_id = cookie_user_read(cookie_header=Headers(scope=scope).get("cookie", ""), key=key)
        if user_id is None:
            if _wants_html(scope) and settings.PORTAL_BASE_URL:
                portal = settings.PORTAL_BASE_URL.rstrip("/")
                await _redirect(send, f"{portal}/sessions/{key}/open")
                return 302
            return await self._refuse(scope, send, 401, "Open this session from the portal.")
        scope["gpuportal.user"] = user_id
        answer = await self.upstream_for(key, user_id)
        if isinstance(answer, str):
            status, message = REFUSALS.get(answer, (403, answer))
            return await self._refuse(scope, send, status, message)

        scope[UPSTREAM_SCOPE_KEY] = answer
        if websocket or not _is_polling(scope, rest):
            self.activity(key)
        if websocket:
            return await self._forward_websocket(scope, receive, send, key)
        return await self._forward_http(scope, receive, send)

    async def _refuse(self, scope: Scope, send: Send, status: int, message: str) -> int:
        if scope["type"] == "websocket":
            # Closing before accepting: the server answers the handshake with 403.
            await send({"type": "websocket.close", "code": 1008})
            return status
        await _explain(scope, send, status, message)
        return status

    async def _sign_in(self, scope: Scope, send: Send, key: str) -> int:
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        ticket = (query.get("ticket") or [""])[0]
        user_id = ticket_read(ticket=ticket, key=key) if ticket else None
        if user_id is None:
            return await self._refuse(
                scope,
                send,
                403,
                "This sign-in link is invalid or has expired: open the session from the portal again.",
            )
        landing = await sync_to_async(_landing_lookup)(key)
        if landing is None:
            return await self._refuse(scope, send, 404, REFUSALS[NO_SUCH_SESSION][1])
        scope["gpuportal.user"] = user_id
        secure = settings.PORTAL_SESSION_PROXY_URL.startswith("https://")
        cookie = cookie_header_make(key=key, user_id=user_id, secure=secure)
        await _redirect(send, f"/s/{key}/{landing.lstrip('/')}", [("set-cookie", cookie)])
        return 302

    async def _forward_http(self, scope: Scope, receive: Receive, send: Send) -> int:
        headers = Headers(scope=scope)
        try:
            if int(headers.get("content-length") or 0) > MAX_BODY_BYTES:
                return await self._refuse(scope, send, 413, "The request body is too large.")
        except ValueError:
            return await self._refuse(scope, send, 400, "Malformed Content-Length.")
        received = 0
        too_large = False

        async def bounded_receive() -> Message:
            nonlocal received, too_large
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > MAX_BODY_BYTES:
                    too_large = True
                    raise BodyTooLarge
            return message

        started: list[int] = []

        async def noting_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                started.append(message["status"])
            await send(message)

        try:
            await proxy_http(
                context=self.context, scope=scope, receive=bounded_receive, send=noting_send
            )
        except (BodyTooLarge, TimeoutError, aiohttp.ClientError, OSError):
            if started:
                raise  # the answer was under way: the connection ends, as any broken stream
            if too_large:  # raised in the body's stream: aiohttp reports it as its own error
                return await self._refuse(scope, send, 413, "The request body is too large.")
            return await self._refuse(
                scope,
                send,
                502,
                "The session's application is not answering yet: it may still be starting. "
                "Try again in a few seconds.",
            )
        return started[0] if started else 500

    async def _forward_websocket(self, scope: Scope, receive: Receive, send: Send, key: str) -> int:
        async def noting_receive() -> Message:
            message = await receive()
            if message["type"] == "websocket.receive":
                self.activity(key)
            return message

        async def noting_send(message: Message) -> None:
            if message["type"] == "websocket.send":
                self.activity(key)
            await send(message)

        client_ws = WebSocket(scope=scope, receive=noting_receive, send=noting_send)
        options = self.context.config.get_upstream_websocket_options(
            scope=scope, client_ws=client_ws
        )
        try:
            upstream_ws = await self.context.session.ws_connect(**options)
        except (TimeoutError, aiohttp.ClientError, OSError) as error:
            # The class and status only: an error's text may quote the URL or headers.
            status = getattr(error, "status", "")
            log.info(
                "session %s: the app refused the WebSocket (%s %s)",
                key,
                type(error).__name__,
                status,
            )
            await send({"type": "websocket.close", "code": 1011})
            return 502
        try:
            await client_ws.accept(subprotocol=upstream_ws.protocol)
            await SessionWebSocketPump(client_ws=client_ws, upstream_ws=upstream_ws).loop()
        finally:
            await upstream_ws.close()
            # The app's own close code reaches the browser (not the ones no frame may carry).
            code = upstream_ws.close_code or 1000
            try:
                await client_ws.close(
                    code=code if 1000 <= code < 5000 and code not in (1005, 1006, 1015) else 1000
                )
            except Exception:  # already closed by the browser
                pass
        return 101
