"""Tapis tokens: what tapipy authenticates with, issued and revoked apart from the user's API
token (``manage.py tapis_token``; docs/tapis.md). Issuing one leaves the API token, and so
gpulab-cli and REST scripts, untouched. Keys are made and hashed as the API token's
(``accounts.tokens``): only the SHA-256 digest is stored, the key is shown once.
"""

from __future__ import annotations

from django.db import OperationalError, transaction
from django.utils import timezone

from accounts.tokens import LAST_USED_RESOLUTION, new_key, token_digest
from core.errors import Conflict
from tapis.models import TapisToken

# A user may hold a few (a laptop, a cluster login node, a notebook server); revoking one
# leaves the others.
TOKENS_PER_USER_MAX = 10


def tapis_token_issue(*, user, name: str = "", now=None) -> tuple[TapisToken, str]:
    """A new Tapis token for ``user``: (row, plain key shown once). Conflict when the user
    holds TOKENS_PER_USER_MAX already."""
    now = now or timezone.now()
    key = new_key()
    with transaction.atomic():
        if TapisToken.objects.filter(user=user).count() >= TOKENS_PER_USER_MAX:
            raise Conflict(
                f"{user.username} holds {TOKENS_PER_USER_MAX} Tapis tokens: revoke one first"
            )
        token = TapisToken.objects.create(
            user=user,
            name=name[:100],
            prefix=key[: TapisToken.PREFIX_LENGTH],
            digest=token_digest(key),
            created=now,
        )
    return token, key


def tapis_token_revoke(*, user, prefix: str = "") -> int:
    """Revoke the user's Tapis token whose key starts with ``prefix`` (every one when empty);
    how many went. The API token is never touched."""
    tokens = TapisToken.objects.filter(user=user)
    if prefix:
        tokens = tokens.filter(prefix=prefix[: TapisToken.PREFIX_LENGTH])
    removed, _ = tokens.delete()
    return removed


def tapis_token_check(key: str) -> TapisToken | None:
    """The Tapis token of this key with its active user (one query), or None; records when it
    was last used, at most every LAST_USED_RESOLUTION."""
    token = (
        TapisToken.objects.select_related("user")
        .filter(digest=token_digest(key), user__is_active=True)
        .first()
    )
    if token is None:
        return None
    now = timezone.now()
    if token.last_used is None or now - token.last_used > LAST_USED_RESOLUTION:
        try:
            with transaction.atomic():
                TapisToken.objects.filter(pk=token.pk).update(last_used=now)
        except OperationalError:
            pass  # a busy database must not refuse a request over a bookkeeping figure
    return token
