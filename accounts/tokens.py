"""API tokens: created and rotated here, stored hashed, checked by ``ApiTokenAuthentication``.

A user has at most one token (rotating replaces it, as before); the plain key leaves the portal
exactly once, in the answer to the request that created it.
"""

import hashlib
import secrets
from datetime import timedelta

from django.db import OperationalError, transaction
from django.utils import timezone
from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication

from accounts.models import ApiToken

# last_used is written at most this often per token: a write per request would serialise every
# API call on SQLite for a figure nobody needs to the second.
LAST_USED_RESOLUTION = timedelta(minutes=5)


def token_digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def new_key() -> str:
    # 40 hex characters, like the keys of DRF's authtoken that earlier versions handed out.
    return secrets.token_hex(20)


def api_token_rotate(*, user, name: str = "", now=None) -> tuple[ApiToken, str]:
    """Replace the user's token by a new one; returns (token row, plain key shown once)."""
    now = now or timezone.now()
    key = new_key()
    with transaction.atomic():
        ApiToken.objects.filter(user=user).delete()
        token = ApiToken.objects.create(
            user=user,
            name=name,
            prefix=key[: ApiToken.PREFIX_LENGTH],
            digest=token_digest(key),
            created=now,
        )
    return token, key


def api_token_of(user) -> ApiToken | None:
    return ApiToken.objects.filter(user=user).first()


def token_with_user(digest: str) -> ApiToken | None:
    """The token of this digest with its user (one query: digest is unique), or None."""
    try:
        return ApiToken.objects.select_related("user").get(digest=digest)
    except ApiToken.DoesNotExist:
        return None


class ApiTokenAuthentication(TokenAuthentication):
    """``Authorization: Token <key>`` as before; the key is hashed and looked up by digest."""

    model = ApiToken

    def authenticate_credentials(self, key):
        token = token_with_user(token_digest(key))
        if token is None:
            raise exceptions.AuthenticationFailed("Invalid token.")
        if not token.user.is_active:
            raise exceptions.AuthenticationFailed("User inactive or deleted.")
        now = timezone.now()
        if token.last_used is None or now - token.last_used > LAST_USED_RESOLUTION:
            try:
                with transaction.atomic():
                    ApiToken.objects.filter(pk=token.pk).update(last_used=now)
            except OperationalError:
                pass  # a busy database must not refuse a request over a bookkeeping figure
        return token.user, token
