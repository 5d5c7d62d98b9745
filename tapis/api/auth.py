"""``X-Tapis-Token``: how Tapis clients (tapipy, curl scripts) send their token. The portal
accepts there a Tapis token (tapis/tokens.py, ``manage.py tapis_token``: issued and revoked
apart from the API token) or its own API token, checked exactly as ``Authorization: Token``
(docs/tapis.md). A Tapis token works only here, never as ``Authorization: Token``.

tapipy insists on a JWT (it reads the claims, such as ``exp``, without verifying them), so the
token may also come wrapped in one: an unsigned JWT whose ``portal_token`` claim is the key
(``manage.py tapis_token`` prints one). The wrapper adds no trust of its own: the key inside is
the credential, checked as above, and revoking it ends the wrapper too.
"""

import base64
import json
import time

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication

from accounts.tokens import ApiTokenAuthentication
from tapis.tokens import tapis_token_check

HEADER = "HTTP_X_TAPIS_TOKEN"
CLAIM = "portal_token"
WRAPPER_TTL_S = 10 * 365 * 24 * 3600  # the wrapper never expires before the token inside


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def tapis_token_wrap(*, key: str, username: str, now: float | None = None) -> str:
    """The portal token ``key`` as an unsigned JWT tapipy accepts as its access token."""
    now = int(now if now is not None else time.time())
    header = {"alg": "none", "typ": "JWT"}
    claims = {
        "iss": "gpu-portal",
        "sub": f"{username}@portal",
        "tapis/username": username,
        "tapis/tenant_id": "portal",
        "tapis/token_type": "access",
        "iat": now,
        "exp": now + WRAPPER_TTL_S,
        CLAIM: key,
    }
    return ".".join((_b64(json.dumps(header).encode()), _b64(json.dumps(claims).encode()), ""))


def tapis_token_unwrap(value: str) -> str:
    """The portal token in ``value``: ``value`` itself, or the claim of a JWT wrapper."""
    if value.count(".") != 2:
        return value
    payload = value.split(".")[1]
    try:
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except (ValueError, UnicodeDecodeError):
        raise exceptions.AuthenticationFailed("Invalid token.") from None
    key = claims.get(CLAIM) if isinstance(claims, dict) else None
    if not isinstance(key, str) or not key:
        raise exceptions.AuthenticationFailed("Invalid token: not a portal token.")
    return key


class TapisTokenAuthentication(BaseAuthentication):
    def authenticate(self, request):
        value = request.META.get(HEADER, "").strip()
        if not value:
            return None  # the other methods (Authorization: Token, session) may apply
        key = tapis_token_unwrap(value)
        token = tapis_token_check(key)
        if token is not None:
            return token.user, token
        return ApiTokenAuthentication().authenticate_credentials(key)

    def authenticate_header(self, request):
        return 'X-Tapis-Token realm="api"'


class TapisTokenScheme(OpenApiAuthenticationExtension):
    """The OpenAPI security scheme of TapisTokenAuthentication (``GET /api/schema``)."""

    target_class = TapisTokenAuthentication
    name = "tapisToken"

    def get_security_definition(self, auto_schema):
        return {
            "type": "apiKey",
            "in": "header",
            "name": "X-Tapis-Token",
            "description": "A Tapis token (`manage.py tapis_token` prints it as the unsigned "
            "JWT tapipy wants) or the portal API token, as Tapis clients send their JWT: the "
            "key itself or wrapped in that JWT (docs/tapis.md).",
        }
