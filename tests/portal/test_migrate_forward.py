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


# --- JobGang moved from jobs to gangs (issue 25 item 1) ------------------------------------------

# The last jobs migration with JobGang in its state: gangs.0001_initial depends on it.
BEFORE_GANGS = ("jobs", "0021_job_runtime_holder")

# Run in the database migrated to BEFORE_GANGS, with the models as they were then (the
# migration state's historical models, as the code of that commit had them).
MAKE_GANG = """
import json
from datetime import UTC, datetime
from django.contrib.admin.models import LogEntry
from django.db import connection
from django.db.migrations.loader import MigrationLoader
apps = MigrationLoader(connection).project_state(("jobs", "0021_job_runtime_holder")).apps
User = apps.get_model("auth", "User")
Permission = apps.get_model("auth", "Permission")
ContentType = apps.get_model("contenttypes", "ContentType")
Project = apps.get_model("accounts", "Project")
Job = apps.get_model("jobs", "Job")
JobEvent = apps.get_model("jobs", "JobEvent")
JobGang = apps.get_model("jobs", "JobGang")
t0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
alice = User.objects.create(username="alice")
bob = User.objects.create(username="bob")
project = Project.objects.create(name="ml-lab", gid=5001)
config = {"jobName": "pai", "taskRoles": [{"name": "worker", "taskNumber": 2}], "retryCount": 1}
gang = JobGang.objects.create(
    name="pai", owner=alice, project=project, config=config, attempt=2, retry_count=1,
    status="QUEUED", created=t0, status_updated=t0,
    attempts=[{"attempt": 1, "status": "FAILED", "reason": "2 task(s) of role worker failed"}],
)
for index in range(2):
    task = Job.objects.create(
        name=f"pai-worker-{index}", owner=alice, project=project, request={"docker": {}},
        gpus=0, cpus=1, cpu_memory_gb=1, min_duration_s=0, max_duration_s=3600,
        status="RUNNING", status_updated=t0, created=t0, openpai_config=config, gang=gang,
        task_role="worker", task_index=index, gang_attempt=2,
    )
    JobEvent.objects.create(job=task, time=t0, type="Info", message=f"task {index} started")
gang_type = ContentType.objects.get(app_label="jobs", model="jobgang")
bob.user_permissions.add(Permission.objects.get(content_type=gang_type, codename="view_jobgang"))
LogEntry.objects.create(  # the admin's model has not changed: today's is that commit's
    user_id=bob.pk, content_type_id=gang_type.pk, object_id=str(gang.pk), object_repr=gang.name,
    action_flag=1, action_time=t0,
)
print(json.dumps({"gang": gang.pk, "content_type": gang_type.pk}))
"""

READ_GANG = """
import json
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import User
from django.contrib.contenttypes.models import ContentType
from gangs.models import JobGang
from jobs.models import Job, JobEvent
gang = JobGang.objects.get()
tasks = list(gang.tasks.order_by("task_index"))
print(json.dumps({
    "gang": [gang.pk, gang.name, gang.owner.username, gang.project.name, gang.attempt,
             gang.status, len(gang.attempts)],
    "tasks": [[t.name, t.task_role, t.task_index, t.gang_attempt, t.gang.name] for t in tasks],
    "events": sorted(e.message for e in JobEvent.objects.filter(job__gang=gang)),
    "current": Job.objects.filter(gang__name="pai", gang_attempt=2).count(),
    "content_type": list(ContentType.objects.get_for_model(JobGang).natural_key()),
    "content_type_pk": ContentType.objects.get_for_model(JobGang).pk,
    "bob_may_view": User.objects.get(username="bob").has_perm("gangs.view_jobgang"),
    "logged": LogEntry.objects.get().get_edited_object().name,
}))
"""


def test_a_gang_made_before_the_move_to_gangs_migrates_forward_with_its_tasks(tmp_path):
    """A database at the last migration before JobGang moved to the gangs app (the schema and
    models of that commit) with a gang of two tasks, their events, a permission granted on
    gangs and an admin log entry: migrated with today's code, the ORM finds all of it through
    ``gangs.JobGang`` in the same table, and nothing is left to migrate."""
    var_dir = tmp_path / "var"
    var_dir.mkdir(mode=0o700)
    database = var_dir / "portal.sqlite3"
    before = manage(var_dir, "migrate", *BEFORE_GANGS, "--noinput")
    assert before.returncode == 0, before.stderr
    admin = manage(var_dir, "migrate", "admin", "--noinput")  # for the admin's log entry
    assert admin.returncode == 0, admin.stderr
    assert "gangs.0001_initial" not in before.stdout + admin.stdout  # not moved yet
    made = manage(var_dir, "shell", "-c", MAKE_GANG)
    assert made.returncode == 0, made.stderr
    ids = json.loads(made.stdout.strip().splitlines()[-1])
    gang_row = rows(database, "jobs_jobgang")
    task_rows = rows(database, "jobs_job")
    assert len(gang_row) == 1 and len(task_rows) == 2
    gang_columns = columns(database, "jobs_jobgang")

    done = manage(var_dir, "migrate", "--noinput")
    assert done.returncode == 0, done.stderr
    assert "gangs.0001_initial" in done.stdout and "jobs.0022_jobgang_to_gangs" in done.stdout
    # The same table and rows (in the columns it had: later migrations add some, such as
    # gangs.0002's started_attempt): no copy, no new table for the model.
    assert rows(database, "jobs_jobgang", only=gang_columns) == gang_row
    assert [r[:3] for r in rows(database, "jobs_job")] == [r[:3] for r in task_rows]
    with sqlite3.connect(database) as connection:
        names = {n for (n,) in connection.execute("SELECT name FROM sqlite_master")}
    assert "jobs_jobgang" in names and not any(n.startswith("gangs_") for n in names)

    read = manage(var_dir, "shell", "-c", READ_GANG)
    assert read.returncode == 0, read.stderr
    seen = json.loads(read.stdout.strip().splitlines()[-1])
    assert seen == {
        "gang": [ids["gang"], "pai", "alice", "ml-lab", 2, "QUEUED", 1],
        "tasks": [["pai-worker-0", "worker", 0, 2, "pai"], ["pai-worker-1", "worker", 1, 2, "pai"]],
        "events": ["task 0 started", "task 1 started"],
        "current": 2,
        # The content type moved (same row), so the permission and the log entry followed.
        "content_type": ["gangs", "jobgang"],
        "content_type_pk": ids["content_type"],
        "bob_may_view": True,
        "logged": "pai",
    }

    again = manage(var_dir, "migrate", "--noinput")
    assert again.returncode == 0 and "No migrations to apply" in again.stdout, again.stdout


# --- JobDelivery moved from jobs to notifications (issue 25 item 1) -----------------------------

# The last jobs migration with JobDelivery in its state: notifications.0001 depends on it.
BEFORE_NOTIFICATIONS = ("jobs", "0021_job_runtime_holder")

# Run in the database migrated to BEFORE_NOTIFICATIONS, with the models as they were then.
MAKE_DELIVERY = """
import json
from datetime import UTC, datetime
from django.contrib.admin.models import LogEntry
from django.db import connection
from django.db.migrations.loader import MigrationLoader
apps = MigrationLoader(connection).project_state(("jobs", "0021_job_runtime_holder")).apps
User = apps.get_model("auth", "User")
Permission = apps.get_model("auth", "Permission")
ContentType = apps.get_model("contenttypes", "ContentType")
Project = apps.get_model("accounts", "Project")
Job = apps.get_model("jobs", "Job")
JobDelivery = apps.get_model("jobs", "JobDelivery")
t0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
alice = User.objects.create(username="alice")
bob = User.objects.create(username="bob")
project = Project.objects.create(name="hooks", gid=5002)
target = {"deliveryMethod": "WEBHOOK", "deliveryAddress": "https://hooks.example.org/x"}
request = {"docker": {}, "notifications": {"subscriptions": [
    {"eventTypes": ["FINISHED"], "deliveryTargets": [target]}]}}
job = Job.objects.create(
    name="hooked", owner=alice, project=project, request=request, gpus=0, cpus=1,
    cpu_memory_gb=1, min_duration_s=0, max_duration_s=3600, status="FINISHED",
    status_updated=t0, created=t0,
)
# A failed first attempt whose retry is due: the move must keep it due, and claimable.
delivery = JobDelivery.objects.create(
    job=job, delivery_id="6f1c3e4a-0000-4000-8000-000000000002", event="FINISHED",
    method="WEBHOOK", address=target["deliveryAddress"], attempt=1, time=t0, ok=False,
    status_code=503, error="HTTP 503", retry_in_s=10, retry_at=t0, subscription_index=0,
    target_index=0,
)
delivery_type = ContentType.objects.get(app_label="jobs", model="jobdelivery")
bob.user_permissions.add(
    Permission.objects.get(content_type=delivery_type, codename="view_jobdelivery")
)
LogEntry.objects.create(  # the admin's model has not changed: today's is that commit's
    user_id=bob.pk, content_type_id=delivery_type.pk, object_id=str(delivery.pk),
    object_repr="attempt 1", action_flag=1, action_time=t0,
)
print(json.dumps({"job": job.pk, "delivery": delivery.pk, "content_type": delivery_type.pk}))
"""

READ_DELIVERY = """
import json
from datetime import UTC, datetime
from django.conf import settings
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import User
from django.contrib.contenttypes.models import ContentType
from core import tasks
from notifications.models import JobDelivery
from notifications.subscriptions import deliveries_retry_due
delivery = JobDelivery.objects.select_related("job").get()
settings.PORTAL_TASK_MODE = "record"
fired = deliveries_retry_due(now=datetime(2026, 12, 1, 12, 1, tzinfo=UTC))
print(json.dumps({
    "delivery": [delivery.pk, delivery.job.name, str(delivery.delivery_id), delivery.attempt,
                 delivery.status_code, delivery.error],
    "by_job": delivery.job.deliveries.count(),
    "fired": [fired, [list(t) for t in tasks.recorded]],
    "content_type": list(ContentType.objects.get_for_model(JobDelivery).natural_key()),
    "content_type_pk": ContentType.objects.get_for_model(JobDelivery).pk,
    "bob_may_view": User.objects.get(username="bob").has_perm("notifications.view_jobdelivery"),
    "logged": str(LogEntry.objects.get().get_edited_object()),
}))
"""


def test_a_delivery_made_before_the_move_to_notifications_migrates_forward(tmp_path):
    """A database at the last migration before JobDelivery moved to the notifications app (the
    schema and models of that commit) with a failed delivery whose retry is due, a permission
    granted on deliveries and an admin log entry: migrated with today's code, the row is the same
    row of the same table, the ORM reads it through ``notifications.JobDelivery`` (and
    ``job.deliveries``), the retry timer still claims it, and nothing is left to migrate."""
    var_dir = tmp_path / "var"
    var_dir.mkdir(mode=0o700)
    database = var_dir / "portal.sqlite3"
    for target in (("admin",), BEFORE_NOTIFICATIONS):  # admin: for the log entry below
        before = manage(var_dir, "migrate", *target, "--noinput")
        assert before.returncode == 0, before.stderr
        assert "notifications.0001" not in before.stdout  # the app's state does not exist yet
    made = manage(var_dir, "shell", "-c", MAKE_DELIVERY)
    assert made.returncode == 0, made.stderr
    ids = json.loads(made.stdout.strip().splitlines()[-1])
    delivery_rows = rows(database, "jobs_jobdelivery")
    assert len(delivery_rows) == 1
    with sqlite3.connect(database) as connection:
        info = connection.execute('PRAGMA table_info("jobs_jobdelivery")')
        columns = [column for _, column, *_ in info]

    done = manage(var_dir, "migrate", "--noinput")
    assert done.returncode == 0, done.stderr
    assert "notifications.0001_jobdelivery_from_jobs" in done.stdout
    assert "jobs.0023_jobdelivery_to_notifications" in done.stdout
    # The same table and row (in the columns it had: later migrations add some), no copy of
    # it under the new app's name.
    assert rows(database, "jobs_jobdelivery", only=columns) == delivery_rows
    with sqlite3.connect(database) as connection:
        names = {n for (n,) in connection.execute("SELECT name FROM sqlite_master")}
    assert "jobs_jobdelivery" in names and "notifications_jobdelivery" not in names

    read = manage(var_dir, "shell", "-c", READ_DELIVERY)
    assert read.returncode == 0, read.stderr
    seen = json.loads(read.stdout.strip().splitlines()[-1])
    delivery_id = "6f1c3e4a-0000-4000-8000-000000000002"
    assert seen == {
        "delivery": [ids["delivery"], "hooked", delivery_id, 1, 503, "HTTP 503"],
        "by_job": 1,
        # Claimed once and fired as attempt 2, by the notifications app's task path.
        "fired": [
            1,
            [["notifications.tasks.job_deliver", [ids["job"], "FINISHED", 0, 0, delivery_id, 2]]],
        ],
        # The content type moved (same row), so the permission and the log entry followed.
        "content_type": ["notifications", "jobdelivery"],
        "content_type_pk": ids["content_type"],
        "bob_may_view": True,
        "logged": "FINISHED to WEBHOOK #1: HTTP 503",
    }

    again = manage(var_dir, "migrate", "--noinput")
    assert again.returncode == 0 and "No migrations to apply" in again.stdout, again.stdout
