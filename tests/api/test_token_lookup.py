"""accounts.tokens.token_with_user (the token query compiled once per process, by
core.compiled_sql) answers what ``ApiToken.objects.select_related("user").get(digest=...)``
answers, on SQLite and PostgreSQL."""

from datetime import UTC, datetime

from tests.support.postgres import ON_BOTH_DATABASES, run_check_on


def check_token_lookup() -> dict:
    from django.contrib.auth.models import User
    from django.db import connection

    from accounts.models import ApiToken
    from accounts.tokens import api_token_rotate, token_digest, token_with_user

    when = datetime(2031, 2, 3, 4, 5, 6, 789000, tzinfo=UTC)
    plain = User.objects.create_user("plain", email="p@example.org")
    busy = User.objects.create_user("busy", first_name="Ann", is_staff=True)
    busy.last_login = when
    busy.save()
    gone = User.objects.create_user("gone", is_active=False)
    compared, mismatches = 0, []
    for user in (plain, busy, gone):
        token, key = api_token_rotate(user=user, name=f"of {user.username}", now=when)
        ApiToken.objects.filter(pk=token.pk).update(last_used=when if user is busy else None)
        for _ in range(2):  # the first call compiles, the second reuses
            mine = token_with_user(token_digest(key))
            orm = ApiToken.objects.select_related("user").get(digest=token_digest(key))
            for a, b in ((mine, orm), (mine.user, orm.user)):
                for field in type(a)._meta.concrete_fields:
                    compared += 1
                    if getattr(a, field.attname) != getattr(b, field.attname):
                        mismatches.append(f"{type(a).__name__}.{field.attname}")
                if a._state.adding or a._state.db != b._state.db:
                    mismatches.append(f"{type(a).__name__} state")
            if mine.user_id != mine.user.pk or mine.user.username != user.username:
                mismatches.append("user")
    return {
        "vendor": connection.vendor,
        "compared": compared,
        "mismatches": mismatches,
        "unknown": token_with_user(token_digest("no such key")) is None,
        "last_login": token_with_user(token_digest(key)).user.last_login is None,  # gone's
    }


def _assert(result):
    assert result["mismatches"] == []
    assert result["compared"] >= 3 * 2 * 2 * 7
    assert result["unknown"] is True
    assert result["last_login"] is True


@ON_BOTH_DATABASES
def test_token_lookup(database, tmp_path):
    _assert(run_check_on(database, check_token_lookup, tmp_path))
