"""A month of runs with fixed times (October 2026, UTC) for the report tests.

vision: alice (member), carol (manager); speech: bob. Every job asks for 2 CPUs and 4 GB.

| job | owner | GPUs | created → started → ended (UTC)         | end state | in October    |
|-----|-------|------|-----------------------------------------|-----------|---------------|
| j1  | alice | 2    | Oct 5 09:50 → 10:00 → 12:00             | FINISHED  | 2 h, wait 10m |
| j2  | alice | 1    | Oct 9 23:00 → Oct 10 00:00 → 01:00      | FAILED    | 1 h, wait 1 h |
| j3  | carol | 4    | Sep 30 20:00 → 22:00 → Oct 1 02:00      | HALTED    | 2 h (clipped) |
| j4  | bob   | 1    | Oct 20 09:00 → 10:00 → 11:00            | FINISHED  | 1 h, wait 1 h |
| j5  | alice | 1    | Oct 15 00:00, cancelled 01:00, no run   | CANCELLED | 0             |

j1 has two samples: GPU readings 80, 60 and 90, 70 (mean 75 %).
"""

from datetime import UTC, datetime

import pytest

from accounts.models import Membership
from jobs.models import Job, JobSample
from tests.web.factories import make_job


def utc(month, day, hour=0, minute=0):
    return datetime(2026, month, day, hour, minute, tzinfo=UTC)


OCTOBER = "from=2026-10-01&to=2026-10-31"


@pytest.fixture
def manager(make_user, project):
    user = make_user("carol")
    Membership.objects.create(user=user, project=project, role=Membership.Role.MANAGER)
    return user


def _sample(job, when, percents):
    JobSample.objects.create(
        job=job,
        time=when,
        cpu_percent=100.0,
        memory_mb=1000,
        net_rx_kbps=0.0,
        net_tx_kbps=0.0,
        gpus=[{"index": i, "percent": p, "memoryUsedMb": 10} for i, p in enumerate(percents)],
        cpu_ns=0,
        net_rx_bytes=0,
        net_tx_bytes=0,
    )


@pytest.fixture
def october(member, manager, outsider, project, other_project, slave):
    def run(owner, proj, gpus, status, created, started, ended, name):
        return make_job(
            owner=owner,
            project=proj,
            status=status,
            slave=slave,
            gpus=gpus,
            created=created,
            started=started,
            ended=ended,
            name=name,
        )

    jobs = {
        "j1": run(member, project, 2, "FINISHED", utc(10, 5, 9, 50), utc(10, 5, 10), utc(10, 5, 12), "j1"),
        "j2": run(member, project, 1, "FAILED", utc(10, 9, 23), utc(10, 10), utc(10, 10, 1), "j2"),
        "j3": run(manager, project, 4, "HALTED", utc(9, 30, 20), utc(9, 30, 22), utc(10, 1, 2), "j3"),
        "j4": run(outsider, other_project, 1, "FINISHED", utc(10, 20, 9), utc(10, 20, 10), utc(10, 20, 11), "j4"),
    }  # fmt: skip
    cancelled = make_job(owner=member, project=project, status="CANCELLED", created=utc(10, 15))
    Job.objects.filter(pk=cancelled.pk).update(status_updated=utc(10, 15, 1))
    jobs["j5"] = cancelled
    _sample(jobs["j1"], utc(10, 5, 10, 30), [80, 60])
    _sample(jobs["j1"], utc(10, 5, 11, 30), [90, 70])
    return jobs
