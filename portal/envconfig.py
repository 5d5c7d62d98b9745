"""Small helpers that read settings from environment variables."""

import os
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    return int(value) if value else default


def env_count(name: str, default: int) -> int:
    """A bound (at least 1); anything else stops the start-up with its name."""
    value = env_int(name, default)
    if value < 1:
        raise ValueError(f"{name} must be at least 1, not {value}")
    return value


def env_list(name: str, default: list[str]) -> list[str]:
    value = os.environ.get(name)
    if value is None:
        return default
    return [item.strip() for item in value.split(",") if item.strip()]


def env_bytes_by_prefix(name: str) -> dict[str, int]:
    """A comma list of ``/path/prefix=bytes`` entries as {prefix: bytes}; a malformed entry
    stops the start-up with its name."""
    limits = {}
    for item in env_list(name, []):
        prefix, _, size = item.rpartition("=")
        prefix = prefix.strip()
        if not prefix.startswith("/") or not size.strip().isdigit():
            raise ValueError(f"{name}: {item!r} is not /path/prefix=bytes")
        limits[prefix] = int(size)
    return limits


def database_from_url(
    url: str,
    *,
    sqlite_path: Path,
    sqlite_busy_timeout_s: float = 20,
    pool_min: int = 0,
    pool_max: int = 4,
    pool_timeout_s: float = 10,
) -> dict:
    """Turn ``postgres://user:pass@host:port/name`` (or empty for SQLite) into DATABASES entry.

    SQLite: WAL (readers never block the writer nor the writer the readers), ``synchronous=
    NORMAL`` (safe with WAL, one fsync per checkpoint instead of per commit), writers wait up to
    ``sqlite_busy_timeout_s`` for the lock, and transactions take it at BEGIN (IMMEDIATE) so a
    read-then-write transaction never fails half-way with "database is locked".

    PostgreSQL: a psycopg pool of at most ``pool_max`` connections per process (0: no pool, one
    persistent connection per thread); a request that waits more than ``pool_timeout_s`` for a
    connection gets a 503. Every process holds at most ``pool_max`` connections, so
    processes x pool_max must stay below the server's max_connections (docs/configuration.md).
    """
    if not url:
        return {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": sqlite_path,
            # Several processes (web, q cluster, watcher) share the file: wait for locks.
            "OPTIONS": {
                "timeout": sqlite_busy_timeout_s,
                "transaction_mode": "IMMEDIATE",
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            },
            # Keep each process's connection: a new one per request would re-read the schema
            # and start with an empty page cache every time.
            "CONN_MAX_AGE": 600,
            "CONN_HEALTH_CHECKS": True,
            # A file, not memory: integration tests share it with watcher threads and servers.
            "TEST": {"NAME": str(sqlite_path.with_name("test-portal.sqlite3"))},
        }
    parsed = urlparse(url)
    if parsed.scheme not in {"postgres", "postgresql"}:
        raise ValueError(f"PORTAL_DATABASE_URL: unsupported scheme {parsed.scheme!r}")
    entry: dict[str, Any] = {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": parsed.path.lstrip("/"),
        "USER": unquote(parsed.username or ""),
        "PASSWORD": unquote(parsed.password or ""),
        "HOST": parsed.hostname or "",
        "PORT": str(parsed.port or ""),
    }
    if pool_max > 0:
        # Django 5.1+ keeps the pool per process; persistent connections must stay off.
        entry["CONN_MAX_AGE"] = 0
        entry["OPTIONS"] = {
            "pool": {
                "min_size": min(pool_min, pool_max),
                "max_size": pool_max,
                "timeout": pool_timeout_s,
            }
        }
    else:
        entry["CONN_MAX_AGE"] = 60
        entry["CONN_HEALTH_CHECKS"] = True
    return entry
