"""The proxy's own cookie: who the browser is, for one session only.

Signed with the portal's secret key (Django signing), bound to the session key, and set for the
path ``/s/<key>/`` only: a cookie of one session never opens another, and the app behind the
proxy never sees it (interactive.proxy.headers removes it from what goes upstream).
"""

from __future__ import annotations

from django.http.cookie import parse_cookie

from interactive.tickets import signed_user_make, signed_user_read

COOKIE_SALT = "interactive.proxy.cookie"
# Longer than any session may run (72 h at most, docs/sessions.md): the cookie only names the
# user; whether they may still open the session is asked again on every request.
COOKIE_MAX_AGE_S = 4 * 86400


def cookie_name(key: str) -> str:
    return f"portal_s_{key}"


def cookie_value_make(*, key: str, user_id: int) -> str:
    return signed_user_make(key=key, user_id=user_id, salt=COOKIE_SALT)


def cookie_value_read(*, value: str, key: str) -> int | None:
    return signed_user_read(value, key=key, salt=COOKIE_SALT, max_age=COOKIE_MAX_AGE_S)


def cookie_header_make(*, key: str, user_id: int, secure: bool) -> str:
    """The Set-Cookie value: HttpOnly (no script of the app reads it), SameSite=Lax, the
    session's path only, Secure when the proxy is served over https."""
    attributes = [
        f"{cookie_name(key)}={cookie_value_make(key=key, user_id=user_id)}",
        f"Path=/s/{key}/",
        f"Max-Age={COOKIE_MAX_AGE_S}",
        "HttpOnly",
        "SameSite=Lax",
    ]
    if secure:
        attributes.append("Secure")
    return "; ".join(attributes)


def cookie_user_read(*, cookie_header: str, key: str) -> int | None:
    """The user id the browser's Cookie header carries for session ``key``, if any."""
    if not cookie_header:
        return None
    # Django's parser, as browsers send cookies: one malformed cookie of the app does not hide
    # the others (http.cookies stops at the first).
    value = parse_cookie(cookie_header).get(cookie_name(key))
    if value is None:
        return None
    return cookie_value_read(value=value, key=key)
