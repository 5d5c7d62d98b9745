"""A busy database answers 503 with Retry-After, never 500; SQLite runs in WAL mode."""

import json
import sqlite3

import pytest
from django.db import OperationalError, connection
from django.test import Client

from jobs.models import Job
from tests.api.conftest import API
from tests.conftest import HELLO_WORLD

pytestmark = pytest.mark.django_db


def _sqlite_only():
    # The default test database is SQLite; under PORTAL_DATABASE_URL these checks do not apply.
    if connection.vendor != "sqlite":
        pytest.skip("SQLite locking")


def test_sqlite_runs_in_wal_mode_with_a_busy_timeout():
    _sqlite_only()
    with connection.cursor() as cursor:
        assert cursor.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert cursor.execute("PRAGMA busy_timeout").fetchone()[0] >= 1000
        assert cursor.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL


@pytest.mark.django_db(transaction=True)
def test_locked_sqlite_answers_503_with_retry_after(member_client, slave, project, settings):
    """Another process holds the write lock longer than the busy timeout: 503, nothing written;
    once it lets go, the same request succeeds."""
    _sqlite_only()
    settings.PORTAL_DB_BUSY_RETRY_AFTER_S = 3
    member_client.get(API + "jobs")  # connect (and record the token's last use)
    connection.connection.execute("PRAGMA busy_timeout = 200")
    other = sqlite3.connect(connection.settings_dict["NAME"], isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        document = json.dumps(HELLO_WORLD)
        response = member_client.post(API + "jobs", data=document, content_type="application/json")
        assert response.status_code == 503
        assert response["Retry-After"] == "3"
        assert response.json() == {"error": "the database is busy; try again in a moment"}
        assert member_client.get(API + "jobs").status_code == 200  # reads go on meanwhile
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert Job.objects.count() == 0
    response = member_client.post(API + "jobs", data=document, content_type="application/json")
    assert response.status_code == 201
    assert Job.objects.count() == 1


def test_busy_database_on_a_page_is_503(member, monkeypatch):
    def locked(user):
        raise OperationalError("database is locked")

    monkeypatch.setattr("accounts.views.api_token_of", locked)
    client = Client()
    client.force_login(member)
    response = client.get("/profile/")
    assert response.status_code == 503
    assert response["Retry-After"] == "2"


def test_pool_timeout_on_the_api_is_503(member_client, monkeypatch):
    from psycopg_pool import PoolTimeout

    def exhausted(*args, **kwargs):
        # What Django raises when the psycopg pool had no connection in time.
        raise OperationalError("couldn't get a connection after 10.00 sec") from PoolTimeout()

    monkeypatch.setattr("jobs.api.views.paginate", exhausted)
    response = member_client.get(API + "jobs")
    assert response.status_code == 503 and response["Retry-After"] == "2"
