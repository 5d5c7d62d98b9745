"""jobs.scheduler_bridge.bulk_writes (the tick's raw SQL) writes exactly what it is given, on
SQLite and on PostgreSQL (where the rows travel as one JSON document): datetimes to the microsecond, nested JSON with quotes and
non-ASCII text, NULLs, foreign keys, and only the rows its condition lets through."""

from datetime import UTC, datetime

import pytest

from tests.support.postgres import run_on_throwaway_database


def check_bulk_writes() -> dict:
    """Run every bulk_writes writer against the configured database; answer what it read back."""
    from django.contrib.auth.models import User
    from django.db import connection, transaction

    from accounts.models import Project
    from jobs.models import Job, JobExplanation
    from jobs.scheduler_bridge.bulk_writes import (
        keys_in,
        keys_locked,
        rows_delete,
        rows_update,
        rows_upsert,
    )

    owner = User.objects.create_user("bulk-owner")
    project = Project.objects.create(name="bulk", gid=7001)
    base = datetime(2030, 1, 2, 3, 4, 5, 123456, tzinfo=UTC)

    def job(name, status):
        return Job.objects.create(
            name=name, owner=owner, project=project, request={}, gpus=1, cpus=1,
            cpu_memory_gb=1, min_duration_s=1, max_duration_s=2, status=status,
            status_updated=base, created=base,
        )  # fmt: skip

    queued, other, third = job("a", "QUEUED"), job("b", "RUNNING"), job("c", "QUEUED")
    tricky = {"say": 'a "quoted" \\ line', "text": "ünïcødé ✓", "n": [1, 2.5, None]}
    later = base.replace(microsecond=654321)
    with transaction.atomic():
        updated = rows_update(
            Job,
            key="id",
            names=["event_times", "status_updated", "end_reason", "gpu_memory_gb"],
            rows=[
                [queued.pk, tricky, later, "it's done", None],
                [other.pk, {}, later, "skipped", 3],
            ],
            where=f"t.{connection.ops.quote_name('status')} = 'QUEUED'",
        )
        written = rows_upsert(
            JobExplanation,
            names=["lines"],
            rows=[[queued.pk, ["first", 'say "hi"']], [other.pk, ["x"]]],
        )
        overwritten = rows_upsert(
            JobExplanation,
            names=["lines"],
            rows=[[queued.pk, ["second ✓"]], [third.pk, ["third"]], [other.pk, ["not me"]]],
            where=("EXISTS (SELECT 1 FROM jobs_job j WHERE j.id = v.c0 AND j.status = 'QUEUED')"),
        )
        deleted = rows_delete(JobExplanation, keys=[third.pk, 999999])
        locked = keys_locked(
            Job, keys=[queued.pk, other.pk, third.pk, 999999], column="status", value="QUEUED"
        )
    queued.refresh_from_db()
    other.refresh_from_db()
    return {
        "updated": updated,
        "event_times": queued.event_times,
        "status_updated": queued.status_updated.isoformat(),
        "end_reason": queued.end_reason,
        "gpu_memory_gb": queued.gpu_memory_gb,
        "other_end_reason": other.end_reason,
        "written": written,
        "overwritten": overwritten,
        "deleted": deleted,
        "lines": dict(JobExplanation.objects.values_list("job__name", "lines")),
        "tricky": tricky,
        "later": later.isoformat(),
        "vendor": connection.vendor,
        "locked": sorted(Job.objects.filter(pk__in=locked).values_list("name", flat=True)),
        "keys_in": sorted(
            Job.objects.filter(pk__in=keys_in(Job, [queued.pk, third.pk, 999999])).values_list(
                "name", flat=True
            )
        ),
        "keys_in_none": list(Job.objects.filter(pk__in=keys_in(Job, [])).values_list("pk")),
        "base": base.isoformat(),
    }


def assert_bulk_writes(result: dict) -> None:
    assert result["updated"] == 1  # the RUNNING job fails the condition
    assert result["event_times"] == result["tricky"]
    assert result["status_updated"] == result["later"]  # microseconds kept
    assert result["end_reason"] == "it's done"
    assert result["gpu_memory_gb"] is None
    assert result["other_end_reason"] == ""
    assert result["written"] == 2
    assert result["overwritten"] == 2  # the RUNNING job's row fails the condition
    assert result["deleted"] == 1
    assert result["lines"] == {"a": ["second ✓"], "b": ["x"]}
    assert result["locked"] == ["a", "c"]  # QUEUED ones only; an unknown key is no error
    assert result["keys_in"] == ["a", "c"]
    assert result["keys_in_none"] == []


@pytest.mark.django_db
def test_bulk_writes_on_the_test_database():
    assert_bulk_writes(check_bulk_writes())


@pytest.mark.postgres
def test_bulk_writes_on_postgres(tmp_path):
    result = run_on_throwaway_database(tmp_path, check_bulk_writes)
    assert_bulk_writes(result)
