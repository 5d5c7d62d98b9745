"""accounts.tokens.token_with_user: the token of a digest with its user in one query (the
lookup of every API request), on SQLite and PostgreSQL."""

from datetime import UTC, datetime

from tests.support.postgres import ON_BOTH_DATABASES, run_check_on


def check_token_lookup() -> dict:
    from django.contrib.auth.models import User
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from accounts.tokens import api_token_rotate, token_digest, token_with_user

    when = datetime(2031, 2, 3, 4, 5, 6, 789000, tzinfo=UTC)
    found, queries = {}, []
    keys = {}
    for user in (
        User.objects.create_user("plain", email="p@example.org"),
        User.objects.create_user("busy", first_name="Ann", is_staff=True),
        User.objects.create_user("gone", is_active=False),
    ):
        token, keys[user.username] = api_token_rotate(user=user, name=f"of {user.username}")
        with CaptureQueriesContext(connection) as captured:
            mine = token_with_user(token_digest(keys[user.username]))
            # The user came with the token: reading it asks nothing more.
            found[user.username] = [mine.pk == token.pk, mine.user.username, mine.name]
        queries.append(len(captured))
    rotated_away = keys["plain"]
    api_token_rotate(user=User.objects.get(username="plain"), now=when)
    return {
        "vendor": connection.vendor,
        "found": found,
        "queries": queries,
        "unknown": token_with_user(token_digest("no such key")) is None,
        "rotated_away": token_with_user(token_digest(rotated_away)) is None,
    }


def _assert(result):
    assert result["found"] == {
        "plain": [True, "plain", "of plain"],
        "busy": [True, "busy", "of busy"],
        "gone": [True, "gone", "of gone"],  # found: ApiTokenAuthentication refuses inactive users
    }
    assert result["queries"] == [1, 1, 1]
    assert result["unknown"] is True
    assert result["rotated_away"] is True


@ON_BOTH_DATABASES
def test_token_lookup(database, tmp_path):
    _assert(run_check_on(database, check_token_lookup, tmp_path))
