"""An existing database from before the floors split migrates forward with nothing lost.

Issue #11 item 1: Project, Membership, Profile, LoginCertificate and ApiToken moved from the
``portal`` app to ``accounts``. tests/fixtures/db-abff728.sql was made by commit abff728 (before
the move; tests/fixtures/make_db_abff728.py) with rows in every table of portal, clusters,
reservations and jobs. Migrating it with today's code must keep every table and every row, move
the content types (so permissions and admin history stay attached) and let the ORM read it all.
"""

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "db-abff728.sql"
APP_TABLE_PREFIXES = ("portal_", "clusters_", "reservations_", "jobs_")
# Tables whose rows point at the moved models by id or content type.
KEPT_TABLES = (
    "auth_user",
    "auth_group",
    "auth_group_permissions",
    "auth_user_groups",
    "auth_user_user_permissions",
    "django_admin_log",
)
MOVED = {"project", "membership", "profile", "logincertificate", "apitoken"}


def manage(var_dir: Path, *args: str) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if k != "PORTAL_DATABASE_URL"}
    environment.update(PORTAL_VAR_DIR=str(var_dir), PYTHONPATH=str(ROOT))
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
    )


def tables(database: Path) -> list[str]:
    with sqlite3.connect(database) as connection:
        names = connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        return sorted(n for (n,) in names if n.startswith(APP_TABLE_PREFIXES + KEPT_TABLES))


def columns(database: Path, table: str) -> list[str]:
    with sqlite3.connect(database) as connection:
        return [row[1] for row in connection.execute(f'PRAGMA table_info("{table}")')]


def rows(database: Path, table: str, only: list[str] | None = None) -> list[tuple]:
    """Every row; ``only`` the given columns (those that existed before a migration)."""
    wanted = ", ".join(f'"{c}"' for c in only) if only else "*"
    with sqlite3.connect(database) as connection:
        return sorted(connection.execute(f'SELECT {wanted} FROM "{table}"'), key=repr)


def content_types(database: Path) -> dict[int, tuple[str, str]]:
    with sqlite3.connect(database) as connection:
        query = "SELECT id, app_label, model FROM django_content_type"
        return {pk: (app, model) for pk, app, model in connection.execute(query)}


def test_a_database_from_abff728_migrates_forward_with_every_row(tmp_path):
    var_dir = tmp_path / "var"
    var_dir.mkdir(mode=0o700)
    database = var_dir / "portal.sqlite3"
    with sqlite3.connect(database) as connection:
        connection.executescript(FIXTURE.read_text())
    before_tables = tables(database)
    before = {table: rows(database, table) for table in before_tables}
    before_columns = {table: columns(database, table) for table in before_tables}
    before_types = content_types(database)
    with sqlite3.connect(database) as connection:
        permissions_before = sorted(connection.execute("SELECT * FROM auth_permission"))
    # Every table of the four apps has rows: the comparison below means something.
    app_tables = [t for t in before_tables if t.startswith(APP_TABLE_PREFIXES)]
    assert len(app_tables) >= 20 and all(before[t] for t in app_tables), before

    done = manage(var_dir, "migrate", "--noinput")
    assert done.returncode == 0, done.stderr
    assert "accounts.0005_content_types_from_portal" in done.stdout

    after_tables = tables(database)
    # Every table stays; tables that later migrations add start empty.
    assert set(before_tables) <= set(after_tables)
    for table in set(after_tables) - set(before_tables):
        assert rows(database, table) == [], table
    for table in before_tables:
        # Columns added later hold their defaults; the old ones keep every value.
        assert set(before_columns[table]) <= set(columns(database, table)), table
        assert rows(database, table, before_columns[table]) == before[table], table
    with sqlite3.connect(database) as connection:
        permissions_after = sorted(connection.execute("SELECT * FROM auth_permission"))
    assert set(permissions_before) <= set(permissions_after)
    after_types = content_types(database)
    for pk, (app, model) in before_types.items():
        expected = ("accounts", model) if app == "portal" and model in MOVED else (app, model)
        assert after_types[pk] == expected

    # The ORM reads the moved models and what points at them.
    code = """
import json
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import User
from accounts.models import ApiToken, LoginCertificate, Membership, Profile, Project
from clusters.models import Cluster
from jobs.models import Job
from reservations.models import Reservation
bob = User.objects.get(username="bob")
print(json.dumps({
    "counts": [m.objects.count() for m in (Project, Membership, Profile, LoginCertificate, ApiToken)],
    "job_projects": sorted(job.project.name for job in Job.objects.all()),
    "alice_projects": sorted(p.name for p in User.objects.get(username="alice").projects.all()),
    "owners": [p.name for p in Cluster.objects.get(id=7).owner_projects.all()],
    "reserved_for": [p.name for p in Reservation.objects.get().projects.all()],
    "bob_powers": [bob.has_perm("accounts.view_project"),
                   bob.has_perm("accounts.change_logincertificate")],
    "logged": LogEntry.objects.get().get_edited_object().name,
}))
"""
    shell = manage(var_dir, "shell", "-c", code)
    assert shell.returncode == 0, shell.stderr
    seen = json.loads(shell.stdout.strip().splitlines()[-1])
    assert seen == {
        "counts": [2, 3, 1, 2, 1],
        "job_projects": ["ml-lab", "vision"],
        "alice_projects": ["ml-lab", "vision"],
        "owners": ["ml-lab"],
        "reserved_for": ["ml-lab"],
        "bob_powers": [True, True],
        "logged": "ml-lab",
    }

    # Nothing left to migrate, and the models match the migrations.
    again = manage(var_dir, "migrate", "--noinput")
    assert again.returncode == 0 and "No migrations to apply" in again.stdout, again.stdout
