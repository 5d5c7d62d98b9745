"""``manage.py check`` (and every start) refuses a session proxy that cannot keep sessions apart
from the portal: a proxy URL on the portal's own origin (an app's JavaScript could then read
portal pages and post to the portal as its viewer), or one that is not an http(s) URL."""

from __future__ import annotations

from urllib.parse import urlsplit

from django.conf import settings
from django.core.checks import Error, register


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    default = {"http": 80, "https": 443}.get(parts.scheme)
    return parts.scheme, (parts.hostname or "").lower(), parts.port or default


@register()
def session_proxy_settings_check(app_configs, **kwargs) -> list[Error]:
    errors = []
    proxy_url = settings.PORTAL_SESSION_PROXY_URL
    scheme, host, _ = _origin(proxy_url)
    if scheme not in ("http", "https") or not host:
        errors.append(
            Error(
                f"PORTAL_SESSION_PROXY_URL must be an http(s) URL, not {proxy_url!r}",
                id="interactive.E101",
            )
        )
    elif settings.PORTAL_BASE_URL and _origin(proxy_url) == _origin(settings.PORTAL_BASE_URL):
        errors.append(
            Error(
                "PORTAL_SESSION_PROXY_URL is on the portal's own origin (PORTAL_BASE_URL): "
                "sessions must be served on another port or host name",
                id="interactive.E102",
            )
        )
    bind_host, _, bind_port = settings.PORTAL_SESSION_PROXY_BIND.rpartition(":")
    if not bind_host or not bind_port.isdigit():
        errors.append(
            Error(
                "PORTAL_SESSION_PROXY_BIND must be host:port, not "
                f"{settings.PORTAL_SESSION_PROXY_BIND!r}",
                id="interactive.E103",
            )
        )
    return errors
