"""The uvicorn server the session proxy runs in (``manage.py session_proxy``, and the tests)."""

from __future__ import annotations

import logging

import uvicorn
from django.conf import settings

from interactive.proxy.gateway import WS_MAX_MESSAGE_BYTES, SessionProxy

# Open connections (a kernel's WebSocket, a long poll) get this long after SIGTERM before they are
# cut: well inside the 20 s every process of the portal stops within.
GRACEFUL_S = 5


class QueryStringScrub(logging.Filter):
    """Drops the query string from paths in uvicorn's own log lines (a WebSocket's "[accepted]"
    line, an error's request line): sign-in tickets and an app's tokens travel there."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(
                arg.split("?", 1)[0] if isinstance(arg, str) and arg.startswith("/") else arg
                for arg in record.args
            )
        return True


def proxy_server_make(*, host: str, port: int) -> uvicorn.Server:
    config = uvicorn.Config(
        SessionProxy(),
        host=host,
        port=port,
        lifespan="on",
        # uvicorn's access log writes query strings; the proxy logs its own lines without them
        # (interactive.proxy.gateway).
        access_log=False,
        log_config=None,  # Django's LOGGING
        proxy_headers=True,
        forwarded_allow_ips=",".join(settings.PORTAL_TRUSTED_PROXIES),
        ws_max_size=WS_MAX_MESSAGE_BYTES,
        timeout_graceful_shutdown=GRACEFUL_S,
        server_header=False,
    )
    logging.getLogger("uvicorn.access").disabled = True
    scrub = QueryStringScrub()
    for name in ("uvicorn.error", "uvicorn.access"):
        if not any(isinstance(f, QueryStringScrub) for f in logging.getLogger(name).filters):
            logging.getLogger(name).addFilter(scrub)
    # The library logs every WebSocket message at DEBUG: never the traffic itself.
    logging.getLogger("asgiproxy").setLevel(logging.INFO)
    return uvicorn.Server(config)
