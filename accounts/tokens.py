"""API tokens: created and rotated here, stored hashed, checked by ``ApiTokenAuthentication``.

A user has at most one token (rotating replaces it, as before); the plain key leaves the portal
exactly once, in the answer to the request that created it.
"""

import hashlib
import secrets
from datetime import timedelta

from django.db import OperationalError, connection, connections, transaction
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
    """``ApiToken.objects.select_related("user").get(digest=digest)``, or None.

    Every API request asks it, and building and compiling that query cost three times running
    it (0.4 of 0.6 ms): the SQL, its converters and the column slices are made once per
    database connection by Django's own compiler, then only run and turned into the two model
    instances as Django's ModelIterable does. tests/api/test_token_lookup.py holds the answers
    equal to the ORM's."""
    lookup = getattr(connection, "_portal_token_lookup", None)
    if lookup is None:
        lookup = connection._portal_token_lookup = _TokenLookup(connection.alias)
    return lookup(digest)


class _TokenLookup:
    def __init__(self, alias: str):
        query = ApiToken.objects.select_related("user").filter(digest="").order_by().query
        compiler = query.get_compiler(using=alias)
        self.sql, params = compiler.as_sql()
        if list(params) != [""]:  # the digest must be the query's one parameter
            raise RuntimeError(f"unexpected parameters of the token query: {params!r}")
        self.alias = alias
        self.compiler = compiler
        self.converters = compiler.get_converters([column for column, _, _ in compiler.select])
        klass_info = compiler.klass_info
        (user_info,) = klass_info["related_klass_infos"]

        def part(info):
            fields = info["select_fields"]
            names = [compiler.select[i][0].target.attname for i in fields]
            return info["model"], names, slice(fields[0], fields[-1] + 1)

        self.token, self.user = part(klass_info), part(user_info)

    def __call__(self, digest: str) -> ApiToken | None:
        with connections[self.alias].cursor() as cursor:
            cursor.execute(self.sql, [digest])
            rows = cursor.fetchall()
        if not rows:
            return None
        if self.converters:
            rows = list(self.compiler.apply_converters(rows, self.converters))
        row = rows[0]
        token_model, token_names, token_at = self.token
        user_model, user_names, user_at = self.user
        token = token_model.from_db(self.alias, token_names, tuple(row[token_at]))
        token.user = user_model.from_db(self.alias, user_names, tuple(row[user_at]))
        return token


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
