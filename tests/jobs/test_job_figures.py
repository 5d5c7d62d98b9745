"""Held memory and run time: computed on Job only, and read from there by every place."""

from datetime import UTC, datetime, timedelta

import pytest
from django.db.models import Sum

from jobs.api.clusters import _usage_by_slave
from jobs.execution.container_spec import GIB, container_spec
from jobs.models import Job
from tests.web.factories import make_job

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def test_held_memory_is_cpu_memory_plus_tmpfs(member, project, slave):
    jobs = []
    for memory, tmpfs in ((4, 0), (8, 3)):
        job = make_job(owner=member, project=project, status="RUNNING", slave=slave)
        Job.objects.filter(pk=job.pk).update(cpu_memory_gb=memory, tmpfs_gb=tmpfs)
        job.refresh_from_db()
        jobs.append(job)
    assert [j.held_memory_gb for j in jobs] == [4, 11]
    assert Job.held_memory_of(8, 3) == 11
    total = Job.objects.aggregate(n=Sum(Job.held_memory_gb_sql()))["n"]
    assert total == 15
    # The slave's "used" memory (API and Live pages) and the container limit read the same.
    assert _usage_by_slave()[slave.pk]["memory_mb"] == 15 * 1024
    assert container_spec(jobs[1], slave, []).mem_limit_bytes == 11 * GIB


def _job(**fields) -> Job:
    base = {"status": "RUNNING", "started_at": None, "ended_at": None, "status_updated": T0}
    return Job(**{**base, **fields})


@pytest.mark.parametrize(
    ("fields", "now", "expected"),
    [
        ({"started_at": None}, T0, None),  # never started
        ({"started_at": T0}, T0 + timedelta(minutes=5), 300),  # running: up to now
        ({"started_at": T0, "ended_at": T0 + timedelta(seconds=90), "status": "FINISHED"}, T0, 90),
        # Ended without a finish time (cancelled by reconcile): its last status change.
        (
            {"started_at": T0, "status": "CANCELLED", "status_updated": T0 + timedelta(seconds=7)},
            T0 + timedelta(hours=1),
            7,
        ),
        ({"started_at": T0 + timedelta(seconds=5)}, T0, 0),  # clocks apart: never negative
    ],
)
def test_run_seconds(fields, now, expected):
    assert _job(**fields).run_seconds(now) == expected
