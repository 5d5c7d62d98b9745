"""API tokens are stored hashed, shown once, never listed; old authtoken keys keep working."""

import hashlib
import importlib
import io
from datetime import UTC, datetime

import pytest
from django.apps import apps
from django.core.management import call_command
from django.db import connection
from rest_framework.test import APIClient

from accounts.models import ApiToken
from accounts.tokens import api_token_rotate

pytestmark = pytest.mark.django_db
ME = "/api/portal/me"


def _dump() -> str:
    out = io.StringIO()
    call_command("dumpdata", stdout=out)
    return out.getvalue()


def _token_client(key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


def test_key_is_stored_only_as_its_digest(member):
    client = APIClient()
    client.force_login(member)
    key = client.post("/api/portal/token").json()["token"]
    row = ApiToken.objects.get(user=member)
    assert row.digest == hashlib.sha256(key.encode()).hexdigest()
    assert row.prefix == key[:8]
    assert key not in _dump()  # no row of any table holds the plain key
    assert _token_client(key).get(ME).json()["username"] == "alice"


def test_wrong_inactive_and_rotated_keys_are_refused(member):
    _, key = api_token_rotate(user=member)
    assert _token_client(key[:-1] + ("0" if key[-1] != "0" else "1")).get(ME).status_code == 401
    member.is_active = False
    member.save()
    assert _token_client(key).get(ME).status_code == 401
    member.is_active = True
    member.save()
    assert _token_client(key).get(ME).status_code == 200
    api_token_rotate(user=member)
    assert _token_client(key).get(ME).status_code == 401


def test_admin_lists_tokens_by_prefix_only(client, admin_user, member, outsider):
    keys = [api_token_rotate(user=u)[1] for u in (member, outsider, admin_user)]
    client.force_login(admin_user)
    listing = client.get("/admin/accounts/apitoken/").content.decode()
    token = ApiToken.objects.get(user=member)
    page = client.get(f"/admin/accounts/apitoken/{token.pk}/change/").content.decode()
    for key in keys:
        assert key[:8] + "…" in listing
        assert key not in listing and key not in page
        assert hashlib.sha256(key.encode()).hexdigest() not in listing + page
    assert client.get("/admin/accounts/apitoken/add/").status_code == 403
    # DRF's own token admin (plain keys) is gone.
    assert client.get("/admin/authtoken/tokenproxy/").status_code == 404


def test_token_create_command_prints_the_key_once(member):
    out = io.StringIO()
    call_command("token_create", "alice", stdout=out)
    key = out.getvalue().strip()
    assert len(key) == 40
    assert ApiToken.objects.get(user=member).digest == hashlib.sha256(key.encode()).hexdigest()
    assert _token_client(key).get(ME).json()["username"] == "alice"


@pytest.mark.django_db(transaction=True)  # SQLite's schema editor refuses to run in a transaction
def test_old_authtoken_keys_are_migrated_and_dropped(member):
    """A database of an earlier version: DRF's authtoken table with a plain key."""
    old_key = "0123456789abcdef0123456789abcdef01234567"
    with connection.cursor() as cursor:
        cursor.execute(
            'CREATE TABLE authtoken_token ("key" varchar(40) PRIMARY KEY, '
            "created timestamp NOT NULL, user_id integer NOT NULL)"
        )
        cursor.execute(
            'INSERT INTO authtoken_token ("key", created, user_id) VALUES (%s, %s, %s)',
            [old_key, datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC), member.pk],
        )
        cursor.execute(
            "INSERT INTO django_migrations (app, name, applied) VALUES (%s, %s, %s)",
            ["authtoken", "0001_initial", datetime(2026, 1, 1, tzinfo=UTC)],
        )
    migration = importlib.import_module("accounts.migrations.0003_apitoken_hashed")
    with connection.schema_editor() as editor:
        migration.copy_authtoken_keys(apps, editor)
    assert "authtoken_token" not in connection.introspection.table_names()
    with connection.cursor() as cursor:
        cursor.execute("SELECT COUNT(*) FROM django_migrations WHERE app = 'authtoken'")
        assert cursor.fetchone()[0] == 0
    token = ApiToken.objects.get(user=member)
    assert token.prefix == old_key[:8] and token.created.year == 2026
    assert old_key not in _dump()
    assert _token_client(old_key).get(ME).json()["username"] == "alice"
