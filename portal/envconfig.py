"""Small helpers that read settings from environment variables."""

import os
from pathlib import Path
from urllib.parse import unquote, urlparse


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    return int(value) if value not in (None, "") else default


def env_list(name: str, default: list[str]) -> list[str]:
    value = os.environ.get(name)
    if value is None:
        return default
    return [item.strip() for item in value.split(",") if item.strip()]


def database_from_url(url: str, *, sqlite_path: Path) -> dict:
    """Turn ``postgres://user:pass@host:port/name`` (or empty for SQLite) into DATABASES entry."""
    if not url:
        return {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": sqlite_path,
            # Several processes (web, q cluster, watcher) share the file: wait for locks.
            "OPTIONS": {"timeout": 30, "transaction_mode": "IMMEDIATE"},
            # A file, not memory: integration tests share it with watcher threads and servers.
            "TEST": {"NAME": str(sqlite_path.with_name("test-portal.sqlite3"))},
        }
    parsed = urlparse(url)
    if parsed.scheme not in {"postgres", "postgresql"}:
        raise ValueError(f"PORTAL_DATABASE_URL: unsupported scheme {parsed.scheme!r}")
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": parsed.path.lstrip("/"),
        "USER": unquote(parsed.username or ""),
        "PASSWORD": unquote(parsed.password or ""),
        "HOST": parsed.hostname or "",
        "PORT": str(parsed.port or ""),
        "CONN_MAX_AGE": 60,
    }
