"""Sign-in hand-off from the portal to the session proxy.

The proxy runs on its own origin (so an app's JavaScript cannot read portal pages), so it cannot
see the portal's session cookie. The portal's login-required ``/sessions/<key>/open`` view checks
access and redirects the browser to the proxy with a short-lived ticket: a signed (key, user id)
pair. The proxy reads it, sets its own cookie for ``/s/<key>/`` and forgets the ticket.

The ticket names the session key so that a ticket for one session cannot open another, and it
expires within a minute so that one leaked from a browser history or a log is worthless.
"""

from __future__ import annotations

from django.core import signing

TICKET_SALT = "interactive.ticket"


def signed_user_make(*, key: str, user_id: int, salt: str) -> str:
    """A URL-safe, timestamped, signed (session key, user id) pair: the ticket and the proxy's
    cookie are both one, each with a salt of its own so that neither passes for the other."""
    return signing.dumps({"k": key, "u": int(user_id)}, salt=salt, compress=False)


def signed_user_read(value: str, *, key: str, salt: str, max_age: int) -> int | None:
    """The user id of a valid pair for session ``key`` no older than ``max_age`` seconds.

    None for a forged, tampered, expired or malformed value, or one made for another session.
    """
    try:
        payload = signing.loads(value, salt=salt, max_age=max_age)
    except (signing.BadSignature, ValueError, TypeError):
        # SignatureExpired is a BadSignature; ValueError/TypeError cover a validly signed but
        # odd payload (only possible with the secret key, kept for a clean None all the same).
        return None
    if not isinstance(payload, dict) or payload.get("k") != key:
        return None
    user_id = payload.get("u")
    if not isinstance(user_id, int) or isinstance(user_id, bool):
        return None
    return user_id


def ticket_make(*, key: str, user_id: int) -> str:
    """A ticket letting ``user_id`` into session ``key``."""
    return signed_user_make(key=key, user_id=user_id, salt=TICKET_SALT)


def ticket_read(*, ticket: str, key: str, max_age: int = 60) -> int | None:
    """The user id of a valid ticket for session ``key`` no older than ``max_age`` seconds."""
    return signed_user_read(ticket, key=key, salt=TICKET_SALT, max_age=max_age)
