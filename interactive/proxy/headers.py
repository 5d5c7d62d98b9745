"""What of the browser's request reaches the app, and what of the app's answer reaches the browser.

Cookies ignore ports, so on a single host (``make run``: portal on :8000, proxy on :8001) the
browser sends the portal's own cookies (its session, its CSRF token) to the proxy too. They, and
the proxy's ``portal_s_*`` cookies, never go upstream: a notebook's server must not be able to act
as its viewer on the portal. The app's token is added here and only here, and any answer header
carrying it is dropped, so it never reaches a browser.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from django.conf import settings
from django.http.cookie import parse_cookie

# Hop-by-hop headers (RFC 9110 7.6.1) belong to one connection, never forwarded; the WebSocket
# handshake's own headers are made anew by the client library for the upstream connection.
HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)
WEBSOCKET_HANDSHAKE = frozenset(
    {
        "sec-websocket-key",
        "sec-websocket-version",
        "sec-websocket-extensions",
        "sec-websocket-protocol",
        "sec-websocket-accept",
    }
)
# Set by the proxy itself: whatever the browser claims is dropped.
PROXY_SET = frozenset(
    {"authorization", "x-forwarded-for", "x-forwarded-host", "x-forwarded-proto", "forwarded"}
)
# Django's messages framework's default cookie (its storage falls back to one).
MESSAGES_COOKIE = "messages"


def portal_cookie_names() -> frozenset[str]:
    return frozenset(
        {
            settings.SESSION_COOKIE_NAME,
            settings.CSRF_COOKIE_NAME,
            settings.LANGUAGE_COOKIE_NAME,
            MESSAGES_COOKIE,
        }
    )


def cookie_header_for_upstream(cookie_header: str) -> str:
    """The browser's cookies less the portal's and the proxy's own."""
    dropped = portal_cookie_names()
    kept = [
        f"{name}={value}"
        for name, value in parse_cookie(cookie_header).items()
        if name not in dropped and not name.startswith("portal_s_")
    ]
    return "; ".join(kept)


def request_headers_for_upstream(
    raw: Iterable[tuple[bytes, bytes]],
    *,
    app_token: str,
    client_host: str,
    scheme: str,
    websocket: bool,
) -> list[tuple[str, str]]:
    """The headers sent to the app: the browser's, less hop-by-hop ones, the portal's cookies and
    any Authorization or X-Forwarded-* it claimed; plus the app's token and X-Forwarded-*.

    Host is kept: apps compare it with Origin for their WebSockets (code-server, Jupyter's
    checks) and build their absolute links from it.
    """
    headers: list[tuple[str, str]] = []
    cookies: list[str] = []
    host = ""
    for raw_name, raw_value in raw:
        name = raw_name.decode("latin-1").lower()
        value = raw_value.decode("latin-1")
        if name in HOP_BY_HOP or name in PROXY_SET:
            continue
        if websocket and name in WEBSOCKET_HANDSHAKE:
            continue
        if name == "cookie":
            cookies.append(value)
            continue
        if name == "host":
            host = value
        headers.append((name, value))
    kept_cookies = cookie_header_for_upstream("; ".join(cookies)) if cookies else ""
    if kept_cookies:
        headers.append(("cookie", kept_cookies))
    if app_token:
        headers.append(("authorization", f"token {app_token}"))
    headers.append(("x-forwarded-for", client_host))
    headers.append(("x-forwarded-proto", scheme))
    if host:
        headers.append(("x-forwarded-host", host))
    return headers


_PATH_ATTRIBUTE = re.compile(r";\s*(path|domain)\s*=[^;]*", re.IGNORECASE)


def set_cookie_for_browser(value: str, *, prefix: str) -> str:
    """An app's Set-Cookie, held to the session's path and the proxy's host: the app's cookies
    never reach another session or the portal."""
    return _PATH_ATTRIBUTE.sub("", value).rstrip("; ") + f"; Path={prefix}"


def location_for_browser(value: str, *, prefix: str, strip_prefix: bool, address: str) -> str:
    """A redirect of the app, as the browser must follow it: an absolute URL to the container's
    own address becomes a path on the proxy, and a root path of an app that was given the
    stripped path (code-server) gets the session's prefix back."""
    for scheme in ("http://", "https://"):
        if value.startswith(scheme + address):
            value = value[len(scheme + address) :] or "/"
            break
    if strip_prefix and value.startswith("/") and not value.startswith("//"):
        if not value.startswith(prefix):
            value = prefix.rstrip("/") + value
    return value


def response_headers_for_browser(
    raw: Iterable[tuple[str, str]],
    *,
    prefix: str,
    strip_prefix: bool,
    address: str,
    app_token: str,
) -> list[tuple[str, str]]:
    headers = []
    for name, value in raw:
        lower = name.lower()
        if lower in HOP_BY_HOP:
            continue
        if app_token and app_token in value:
            continue  # an app echoing its token (a redirect with ?token=...) never shows it
        if lower == "set-cookie":
            value = set_cookie_for_browser(value, prefix=prefix)
        elif lower == "location":
            value = location_for_browser(
                value, prefix=prefix, strip_prefix=strip_prefix, address=address
            )
        headers.append((lower, value))
    return headers
