"""A throwaway PostgreSQL database per test, on the server PORTAL_TEST_POSTGRES_URL names.

Each database has a unique name and is dropped afterwards (also with connections still open),
so tests and concurrent test runs never share one.
"""

import json
import os
import subprocess
import sys
import time
import uuid
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlparse, urlunparse

import pytest

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
        _drop_database(url, name)


def _drop_database(url: str, name: str, tries: int = 5) -> None:
    """Drop ``name`` (its connections ended first); a busy server or a client still connecting
    when the drop began gets another try, so that a failed test leaves no database behind."""
    import psycopg

    for attempt in range(1, tries + 1):
        try:
            with psycopg.connect(url, autocommit=True, connect_timeout=10) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            return
        except psycopg.Error:
            if attempt == tries:
                raise
            time.sleep(attempt)


ROOT = Path(__file__).resolve().parents[2]


def run_on_throwaway_database(var_dir, check):
    """Migrate a fresh database, call ``check()`` (a module-level function) in a ``manage.py
    shell`` on it and answer what it returned (JSON): the code runs with the portal's own
    PostgreSQL settings, not the test run's database (the shell makes sure of that)."""
    module, function = check.__module__, check.__name__
    with throwaway_database(f"portal_{function}"[:40]) as url:
        env = {
            **os.environ,
            "PORTAL_DATABASE_URL": url,
            "PORTAL_VAR_DIR": str(var_dir),
            "DJANGO_SETTINGS_MODULE": "portal.settings",
            "PYTHONPATH": str(ROOT),
        }
        manage = [sys.executable, str(ROOT / "manage.py")]
        subprocess.run([*manage, "migrate", "-v0"], env=env, check=True, cwd=ROOT)
        script = (
            "import json; from django.db import connection; "
            f"from {module} import {function}; "
            "assert connection.vendor == 'postgresql', connection.vendor; "
            f"print('RESULT ' + json.dumps({function}()))"
        )
        run = subprocess.run(
            [*manage, "shell", "-c", script], env=env, cwd=ROOT, capture_output=True, text=True
        )
    assert run.returncode == 0, run.stderr[-4000:]
    line = next(x for x in run.stdout.splitlines() if x.startswith("RESULT "))
    return json.loads(line.removeprefix("RESULT "))


# A check that must hold on both databases: this test's SQLite one, and a fresh PostgreSQL one.
ON_BOTH_DATABASES = pytest.mark.parametrize(
    "database",
    [
        pytest.param("sqlite", marks=pytest.mark.django_db),
        pytest.param("postgresql", marks=pytest.mark.postgres),
    ],
)


def run_check_on(database: str, check, var_dir):
    """``check()`` (a module-level function answering JSON) on ``database``."""
    if database == "postgresql":
        return run_on_throwaway_database(var_dir, check)
    from django.db import connection

    assert connection.vendor == "sqlite", connection.vendor
    return check()
