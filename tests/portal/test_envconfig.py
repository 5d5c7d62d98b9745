"""PORTAL_DATABASE_URL and the database settings under load (WAL, busy timeout, pool)."""

from pathlib import Path

import pytest

from portal.envconfig import database_from_url


def test_sqlite_uses_wal_immediate_transactions_and_a_busy_timeout():
    entry = database_from_url("", sqlite_path=Path("/v/portal.sqlite3"), sqlite_busy_timeout_s=7)
    options = entry["OPTIONS"]
    assert options["timeout"] == 7
    assert options["transaction_mode"] == "IMMEDIATE"
    assert "PRAGMA journal_mode=WAL" in options["init_command"]
    assert "PRAGMA synchronous=NORMAL" in options["init_command"]
    assert entry["CONN_MAX_AGE"] > 0


def test_postgres_gets_a_bounded_pool():
    entry = database_from_url(
        "postgres://u:p%40ss@db.example.org:5433/portal",
        sqlite_path=Path("/v/x"),
        pool_min=1,
        pool_max=3,
        pool_timeout_s=5,
    )
    assert (entry["NAME"], entry["USER"], entry["PASSWORD"], entry["HOST"], entry["PORT"]) == (
        "portal",
        "u",
        "p@ss",
        "db.example.org",
        "5433",
    )
    assert entry["OPTIONS"]["pool"] == {"min_size": 1, "max_size": 3, "timeout": 5}
    assert entry["CONN_MAX_AGE"] == 0  # Django refuses persistent connections with a pool


def test_postgres_without_pool_keeps_persistent_connections():
    entry = database_from_url("postgresql://u@h/n", sqlite_path=Path("/v/x"), pool_max=0)
    assert "OPTIONS" not in entry
    assert entry["CONN_MAX_AGE"] == 60 and entry["CONN_HEALTH_CHECKS"] is True


def test_other_schemes_are_refused():
    with pytest.raises(ValueError, match="unsupported scheme 'mysql'"):
        database_from_url("mysql://u@h/n", sqlite_path=Path("/v/x"))
