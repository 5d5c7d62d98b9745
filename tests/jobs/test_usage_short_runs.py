"""Usage accrues for every second a job held GPUs, however short (issue 26 item 4).

GPULab's fair share: "GPULab will prefer to start jobs of people that have used GPULab the least
lately" (seed 002). Before, usage was added only for the jobs running at the moment of a tick:
three jobs of a few seconds that started and ended between two ticks left no usage at all, and
a job that ended between ticks lost the seconds since the last one. The Usage page (which reads
without writing) and the scheduler's fair-share order must agree with what the tick stores.
"""

from datetime import timedelta

import pytest
from django.utils import timezone

from jobs.models import Job, UserUsage
from jobs.scheduler.model import QueuedJob
from jobs.scheduler.ordering import order_queue
from jobs.scheduler_bridge.snapshot import build_snapshot, running_rows, scheduler_config
from jobs.scheduler_bridge.usage import usage_accrue
from jobs.web.dashboard import fair_share
from tests.web.factories import make_job

pytestmark = pytest.mark.django_db


@pytest.fixture
def plain_weights(settings):
    """GPUs only and a decay too slow to show: usage is plain GPU-seconds."""
    settings.PORTAL_USAGE_WEIGHTS = {"gpu": 1.0, "cpu": 0.0, "mem_gb": 0.0}
    settings.PORTAL_USAGE_HALF_LIFE_S = 100 * 365 * 86400


def tick(now):
    """What a tick does about usage (``jobs.scheduler_bridge.tick.tick_once``)."""
    return usage_accrue(now=now, running=running_rows(), config=scheduler_config())


def ended_run(*, owner, project, slave, gpus, started, seconds):
    ended = started + timedelta(seconds=seconds)
    job = make_job(
        owner=owner,
        project=project,
        status="FINISHED",
        slave=slave,
        gpus=gpus,
        started=started,
        ended=ended,
    )
    # The finisher records the end a moment after the container's own finish time.
    Job.objects.filter(pk=job.pk).update(status_updated=ended + timedelta(milliseconds=300))
    return job


def test_three_jobs_of_a_few_seconds_leave_usage(plain_weights, member, outsider, project, slave):
    t0 = timezone.now() - timedelta(minutes=10)
    UserUsage.objects.create(user=outsider, value=0.0, updated_at=t0)
    tick(t0)  # the last tick before they ran
    for i, seconds in enumerate((3, 4, 5)):
        ended_run(
            owner=member,
            project=project,
            slave=slave,
            gpus=2,
            started=t0 + timedelta(seconds=10 * i + 1),
            seconds=seconds,
        )
    t1 = t0 + timedelta(minutes=1)
    expected = 2 * (3 + 4 + 5)  # GPU-seconds
    # The page reads before any tick counted them, and already agrees.
    assert fair_share(member, now=t1)["value"] == pytest.approx(expected, rel=1e-5)
    tick(t1)
    assert UserUsage.objects.get(user=member).value == pytest.approx(expected, rel=1e-5)
    # Counted once: later ticks (with nothing running) add nothing.
    tick(t1 + timedelta(minutes=1))
    tick(t1 + timedelta(minutes=2))
    stored = UserUsage.objects.get(user=member)
    assert stored.value == pytest.approx(expected, rel=1e-5)
    later = t1 + timedelta(minutes=3)
    page = fair_share(member, now=later)
    assert page["value"] == pytest.approx(stored.value, rel=1e-5)
    assert page["rank"] == 2  # heavier than the user who ran nothing
    # The scheduler's fair share reads the same number and orders the lighter user first.
    snapshot, _ = build_snapshot(later)
    assert snapshot.usage[member.username] == pytest.approx(expected, rel=1e-5)
    assert snapshot.usage[outsider.username] == 0.0


def test_the_seconds_after_the_last_tick_of_a_run_are_counted(
    plain_weights, member, project, slave
):
    t0 = timezone.now() - timedelta(minutes=10)
    job = make_job(owner=member, project=project, status="RUNNING", slave=slave, gpus=1, started=t0)
    tick(t0 + timedelta(seconds=2))  # running: 2 s so far
    assert UserUsage.objects.get(user=member).value == pytest.approx(2.0, rel=1e-5)
    Job.objects.filter(pk=job.pk).update(
        status="FINISHED",
        ended_at=t0 + timedelta(seconds=7),
        status_updated=t0 + timedelta(seconds=8),
    )
    tick(t0 + timedelta(seconds=30))
    # 7 s in all: before, the 5 s between the tick and the end were lost.
    assert UserUsage.objects.get(user=member).value == pytest.approx(7.0, rel=1e-5)
    tick(t0 + timedelta(seconds=60))
    assert UserUsage.objects.get(user=member).value == pytest.approx(7.0, rel=1e-5)


def test_a_run_whose_end_was_recorded_late_is_counted(plain_weights, member, project, slave):
    """The watcher was down: the end is recorded an hour after the container finished (its
    status change is recent, its ended_at old); the run still counts, once, up to its end."""
    t0 = timezone.now() - timedelta(hours=3)
    tick(t0)
    job = ended_run(
        owner=member, project=project, slave=slave, gpus=1, started=t0 + timedelta(minutes=1),
        seconds=90,
    )  # fmt: skip
    recorded = t0 + timedelta(hours=2)
    Job.objects.filter(pk=job.pk).update(status_updated=recorded)
    tick(recorded + timedelta(seconds=5))
    assert UserUsage.objects.get(user=member).value == pytest.approx(90.0, rel=1e-5)


def test_queue_order_follows_short_runs(plain_weights, member, outsider, project, slave):
    """Fair share in the queue: after its short runs, alice's next job goes behind bob's."""
    t0 = timezone.now() - timedelta(minutes=10)
    tick(t0)
    for i in range(3):
        ended_run(
            owner=member, project=project, slave=slave, gpus=1,
            started=t0 + timedelta(seconds=5 * i + 1), seconds=3,
        )  # fmt: skip
    usage = tick(t0 + timedelta(minutes=1))
    assert usage[member.username] == pytest.approx(9.0, rel=1e-5)
    jobs = [
        QueuedJob(id="a", user=member.username, project="p", submitted_at=t0),
        QueuedJob(id="b", user=outsider.username, project="p", submitted_at=t0),
    ]
    assert [j.id for j in order_queue(jobs, usage)] == ["b", "a"]
