"""Runtime failures, each flagged permanent (fail the job with the message) or transient (retry).

The classification is pure (no Docker import) so that it can be tested on messages alone;
``engine`` maps SDK and HTTP exceptions onto it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from contextlib import contextmanager
from urllib.parse import quote

REDACTED = "***"

# Messages that no retry will change: the request itself is wrong, or the thing is not there.
_PERMANENT_PATTERNS = re.compile(
    "|".join(
        [
            r"pull access denied",
            r"manifest unknown",
            r"manifest for .* not found",
            r"repository does not exist",
            r"no such image",
            r"not found",
            r"unauthorized",
            r"authentication required",
            r"access (to the resource )?(is )?denied",
            r"invalid reference format",
            r"invalid (mount|argument|volume|port|cpuset|parameter)",
            r"bind source path does not exist",
            r"executable file not found",
            r"no such file or directory",
            r"could not select device driver",
            r"unknown or invalid runtime",
            r"conflict",
            r"already in use",
            r"refused: ",  # our own refusals (spec checks)
        ]
    ),
    re.IGNORECASE,
)

# Messages that say "later may work", even when they also match a permanent pattern above
# (a registry answering 503 "not found" from a load balancer, a TLS handshake timeout, ...).
_TRANSIENT_PATTERNS = re.compile(
    "|".join(
        [
            r"timeout",
            r"timed out",
            r"temporar",  # temporary / temporarily
            r"too many requests",
            r"toomanyrequests",
            r"service unavailable",
            r"bad gateway",
            r"connection reset",
            r"broken pipe",
            r"unexpected eof",
            r"try again",
        ]
    ),
    re.IGNORECASE,
)

# During a pull, a registry that cannot be resolved or refuses connections is a wrong image
# reference far more often than a registry that happens to be down: failing at once gives the
# user a clear message instead of a job that sits in retries.
_PULL_PERMANENT_PATTERNS = re.compile(
    r"connection refused|no such host|server misbehaving|http: server gave http response",
    re.IGNORECASE,
)


class RuntimeFailure(Exception):
    """A Docker operation that failed.

    ``permanent``: retrying will not help (bad image, bad mount, refused by policy, ...); the
    job should fail with ``str(failure)``. Otherwise the engine was unreachable, slow or busy
    and the operation may be retried. ``status_code`` is the engine's HTTP status when it
    answered. Messages never contain registry passwords (see ``redact``).
    """

    def __init__(self, message: str, *, permanent: bool, status_code: int | None = None):
        super().__init__(message)
        self.message = message
        self.permanent = permanent
        self.status_code = status_code

    def __repr__(self) -> str:
        kind = "permanent" if self.permanent else "transient"
        return f"RuntimeFailure({self.message!r}, {kind}, status={self.status_code})"


class ContainerNotFound(RuntimeFailure):
    """The container does not exist (removed by someone, or never created on this engine)."""

    def __init__(self, message: str, *, status_code: int | None = 404):
        super().__init__(message, permanent=True, status_code=status_code)


class ContainerNotRunning(RuntimeFailure):
    """A signal was sent to a container that has already stopped."""

    def __init__(self, message: str, *, status_code: int | None = 409):
        super().__init__(message, permanent=True, status_code=status_code)


class HostPortBusy(RuntimeFailure):
    """A host port the container was to publish is taken: by a process outside the engine
    ("address already in use": another engine's container on the same machine, another
    installation) or by another container of the same engine ("port is already allocated").

    ``host_port``: the port the engine named (None when its message named none). Permanent:
    starting the same container again fails the same way. Whose problem it is depends on who
    chose the port (the user or the portal): the launch decides (jobs.execution.staging).
    """

    def __init__(self, message: str, *, host_port: int | None, status_code: int | None = None):
        super().__init__(message, permanent=True, status_code=status_code)
        self.host_port = host_port


# Docker's words for a taken host port: docker-proxy's or (Docker 28) the engine's own bind
# ("... listen tcp4 0.0.0.0:20000: bind: address already in use", "failed to bind host port
# for 0.0.0.0:20000:172.17.0.2:80/tcp: address already in use"), and its own allocator ("Bind
# for 0.0.0.0:20000 failed: port is already allocated").
_PORT_BUSY = re.compile(r"address already in use|port is already allocated", re.IGNORECASE)
# The first host address:port in such a message: 0.0.0.0:20000, [::]:20000, :::20000.
_BUSY_ADDRESS = re.compile(
    r"(?:\b\d{1,3}(?:\.\d{1,3}){3}|\[[0-9A-Fa-f:.]*\]|[0-9A-Fa-f]*::[0-9A-Fa-f:]*?):(\d{1,5})\b"
)


def host_port_busy(message: str, *, status_code: int | None = None) -> HostPortBusy | None:
    """The HostPortBusy an engine's ``message`` describes, None when it is about another
    thing (a container name "already in use" is a conflict, not a port)."""
    if not _PORT_BUSY.search(message):
        return None
    address = _BUSY_ADDRESS.search(message)
    port = int(address.group(1)) if address else None
    if port is not None and not 0 < port <= 65535:
        port = None
    return HostPortBusy(message, host_port=port, status_code=status_code)


def is_permanent(message: str, *, status_code: int | None, operation: str = "") -> bool:
    """Whether an engine answer (HTTP status and message) describes a permanent failure.

    No status (the engine was never reached) is transient. 4xx answers are permanent except
    408/429; 5xx answers are transient unless the message names a permanent cause (Docker
    reports a missing image, a bad mount or an unknown executable as 500 on older engines).
    """
    if status_code is None:
        return False
    if 400 <= status_code < 500:
        return status_code not in (408, 429)
    if _TRANSIENT_PATTERNS.search(message):
        return False
    if operation == "pull" and _PULL_PERMANENT_PATTERNS.search(message):
        return True
    return bool(_PERMANENT_PATTERNS.search(message))


# "user:password@" in an image reference that reached the engine unsplit.
_INLINE_CREDENTIALS = re.compile(r"(?<![\w/])([\w\-+.]+):[^@\s/\"']+@")


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """``text`` with every non-empty secret (also URL-encoded) replaced by ``***``, and any
    inline ``user:password@`` credentials reduced to ``user:***@``."""
    for secret in secrets:
        if not secret:
            continue
        for form in {secret, quote(secret, safe=""), quote(secret)}:
            text = text.replace(form, REDACTED)
    return _INLINE_CREDENTIALS.sub(rf"\1:{REDACTED}@", text)


@contextmanager
def removed_on_failure(engine, container_id: str):
    """Remove the created container when the block fails (starting it, copying into it): a
    launch that does not start leaves nothing behind. The block's failure is re-raised."""
    try:
        yield
    except RuntimeFailure:
        try:
            engine.remove(container_id)
        except RuntimeFailure:
            pass  # the first failure is the one to report
        raise
