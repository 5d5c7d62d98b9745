"""A throwaway PostgreSQL database per test, on the server PORTAL_TEST_POSTGRES_URL names.

Each database has a unique name and is dropped afterwards (also with connections still open),
so tests and concurrent test runs never share one.
"""

import os
import uuid
from contextlib import contextmanager
from urllib.parse import urlparse, urlunparse

from tests.support.services import require


def postgres_url() -> str | None:
    return os.environ.get("PORTAL_TEST_POSTGRES_URL")


def postgres_reachable(url: str) -> bool:
    try:
        import psycopg

        with psycopg.connect(url, connect_timeout=3):
            return True
    except Exception:
        return False


@contextmanager
def throwaway_database(prefix: str):
    """Yield the URL of a fresh database; skip (or fail in CI) without a reachable server."""
    url = postgres_url()
    require(
        "postgres", bool(url) and postgres_reachable(url), "PORTAL_TEST_POSTGRES_URL not reachable"
    )
    import psycopg

    name = f"{prefix}_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield urlunparse(urlparse(url)._replace(path=f"/{name}"))
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
