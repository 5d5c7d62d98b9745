"""jobs.selectors.job_count_in_states: the number of jobs in some states, exact after every kind of write.

On PostgreSQL it is the sum of deltas that triggers add (jobs/migrations/0017): checked after
single and bulk inserts, ORM and transition-service state changes, updates that leave the state
alone, deletes, TRUNCATE, the migration's seeding of existing jobs, compaction (also while
another connection writes). On SQLite, the b-tree count."""

import itertools
import threading
from datetime import UTC, datetime

import pytest

from tests.support.postgres import run_on_throwaway_database

STATE_SETS = [
    {"QUEUED"},
    {"RUNNING", "FINISHED"},
    {"DELETED"},
    {"QUEUED", "RUNNING", "FINISHED", "FAILED", "CANCELLED"},
]


def check_state_counts() -> dict:
    """Write jobs every way the portal does; answer each check's (expected, counted) pairs."""
    from django.contrib.auth.models import User
    from django.core.management import call_command
    from django.db import connection, connections, transaction

    from accounts.models import Project
    from jobs.models import Job
    from jobs.scheduler_bridge.apply import TransitionRequest, job_transition_many
    from jobs.scheduler_bridge.bulk_writes import job_state_counts_compact
    from jobs.selectors import job_count_in_states
    from jobs.states import JobStatus

    every = {s.value for s in JobStatus}
    owner = User.objects.create_user("count-owner")
    project = Project.objects.create(name="counts", gid=7002)
    base = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)
    fields = dict(owner=owner, project=project, request={}, gpus=1, cpus=1, cpu_memory_gb=1,
                  min_duration_s=1, max_duration_s=2, status_updated=base, created=base)  # fmt: skip
    checks: dict[str, list] = {}

    def check(step: str) -> None:
        pairs = []
        for states in [*STATE_SETS, every, set()]:
            expected = Job.objects.filter(status__in=states).count()
            pairs.append([expected, job_count_in_states(states)])
        checks[step] = pairs

    check("empty")
    for i, status in enumerate(["QUEUED", "QUEUED", "RUNNING", "FINISHED", "DELETED"]):
        Job.objects.create(name=f"single-{i}", status=status, **fields)
    check("single inserts")
    # As submits write them: one statement (UNNEST on PostgreSQL) for many rows.
    Job.objects.bulk_create(
        Job(name=f"bulk-{i}", status="QUEUED" if i % 3 else "FAILED", **fields) for i in range(40)
    )
    check("bulk insert")
    Job.objects.filter(name__startswith="bulk-", status="QUEUED").update(status="RUNNING")
    check("ORM state change")
    Job.objects.filter(status="RUNNING").update(tally_increment=2.5)
    Job.objects.filter(status="RUNNING").update(status="RUNNING")
    check("updates keeping the state")
    queued = list(Job.objects.filter(status="QUEUED"))
    job_transition_many(
        requests=[TransitionRequest(job=job, to=JobStatus.CANCELLED) for job in queued], now=base
    )
    check("transition service")
    Job.objects.filter(name="single-0").delete()
    Job.objects.filter(name__startswith="bulk-", status="FAILED").delete()
    check("deletes")
    with transaction.atomic():
        Job.objects.filter(status="RUNNING").update(status="FINISHED")
        check("inside a transaction")
    try:
        with transaction.atomic():
            Job.objects.filter(status="FINISHED").update(status="FAILED")
            raise RuntimeError("roll back")
    except RuntimeError:
        pass
    check("rolled back")
    folded = job_state_counts_compact()
    check("compacted")

    def writer():
        try:
            for i in range(60):
                Job.objects.create(name=f"w-{i}", status=["QUEUED", "RUNNING"][i % 2], **fields)
                if i % 10 == 0:
                    Job.objects.filter(name=f"w-{i}").update(status="FINISHED")
        finally:
            connections.close_all()

    thread = threading.Thread(target=writer)
    thread.start()
    compactions = 0
    while thread.is_alive():
        job_state_counts_compact()
        compactions += 1
    thread.join()
    check("compacted while another connection wrote")
    job_state_counts_compact()
    rows_after = None
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT COUNT(*) FROM jobs_jobstatecount")
            rows_after = cursor.fetchone()[0]
    check("compacted again")

    # The migration counts the jobs that exist when it runs.
    call_command("migrate", "jobs", "0016", verbosity=0)
    # The job as that schema had it: today's model has columns added since.
    from django.db.migrations.executor import MigrationExecutor

    old_apps = (
        MigrationExecutor(connection).loader.project_state(("jobs", "0016_jobgang_copy_of")).apps
    )
    old_fields = {k: v for k, v in fields.items() if k not in ("owner", "project")}
    old_apps.get_model("jobs", "Job").objects.create(
        name="before-counting", status="HALTED", owner_id=owner.pk, project_id=project.pk,
        **old_fields,
    )  # fmt: skip
    # Every app forward, not only jobs: migrating jobs back unapplied the other apps'
    # migrations that depend on it (tapis, gangs, notifications).
    call_command("migrate", verbosity=0)
    check("migrated over existing jobs")
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("TRUNCATE jobs_job CASCADE")
    else:
        Job.objects.all().delete()
    check("truncated")
    return {
        "vendor": connection.vendor,
        "checks": checks,
        "folded": folded,
        "compactions": compactions,
        "rows_after": rows_after,
        "states": len(every),
    }


def assert_state_counts(result: dict) -> None:
    for step, pairs in result["checks"].items():
        assert all(expected == counted for expected, counted in pairs), (step, pairs)
    totals = [pairs[-2][0] for pairs in result["checks"].values()]
    assert max(totals) >= 80, totals  # the checks counted jobs, not only empty tables


@pytest.mark.postgres
def test_state_counts_on_postgres(tmp_path):
    result = run_on_throwaway_database(tmp_path, check_state_counts)
    assert_state_counts(result)
    assert result["folded"] > 8  # the deltas were rows of their own before compaction
    assert result["compactions"] >= 1
    assert 0 < result["rows_after"] <= result["states"]


@pytest.mark.django_db(transaction=True)
def test_state_counts_on_sqlite():
    result = check_state_counts()
    assert result["vendor"] == "sqlite"
    assert_state_counts(result)
    assert result["folded"] == 0


def test_state_sets_are_states():
    from jobs.states import JobStatus

    every = {s.value for s in JobStatus}
    assert all(states <= every for states in STATE_SETS)
    assert list(itertools.chain(*STATE_SETS))
