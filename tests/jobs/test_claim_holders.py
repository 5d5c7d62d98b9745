"""Claims that name their holder (issue 24 item 9): a claim by a process of this host that is
gone is dead at once, not after the grace period; a live holder's claim and another host's
claim keep the rules they had (the beat, PORTAL_RECOVERY_GRACE_S / PORTAL_TICK_LEASE_S).

Fast: no Docker. The same rule under a real ``kill -9`` is timed by
tests/integration/test_fault_drills.py.
"""

import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from jobs.execution import heartbeat
from jobs.execution.heartbeat import holder_dead, holder_here, holder_name, process_name
from jobs.execution.reconcile import reconcile_all
from jobs.execution.runs import _claim, runtime_work_stale
from jobs.models import Job, SchedulerLease
from jobs.scheduler_bridge.tick import lease_acquire_or_request_rerun, lease_holder
from tests.jobs.test_recovery import FakeEngine, place, tasks_named

LAUNCH, HALT, TICK = "jobs.tasks.job_launch", "jobs.tasks.job_halt", "jobs.tasks.scheduler_tick"
OTHER_HOST = "gpu7~0123456789"  # another node's name: its pids mean nothing here
ROOT = Path(__file__).resolve().parents[2]
NAMES_ITSELF = (
    "import time; from jobs.execution.heartbeat import holder_name; "
    "print(holder_name(), flush=True); time.sleep(30)"
)


def _worker() -> tuple[subprocess.Popen, str]:
    """Another process of this host, and the holder name it gives itself."""
    child = subprocess.Popen(
        [sys.executable, "-c", NAMES_ITSELF], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    return child, child.stdout.readline().strip()


@pytest.fixture
def dead_holder():
    """The holder name of a process of this host that has ended (and was reaped)."""
    child, name = _worker()
    assert holder_here(name) and not holder_dead(name)  # alive: its claim is its own
    child.kill()
    child.wait()
    child.stdout.close()
    return name


@pytest.fixture
def engine(monkeypatch, settings):
    settings.PORTAL_RECOVERY_GRACE_S = 15
    fake = FakeEngine()
    for module in ("jobs.execution.runs", "jobs.execution.reconcile"):
        monkeypatch.setattr(f"{module}.engine_for", lambda slave: fake)
    monkeypatch.setattr("jobs.execution.reconcile.slave_probe", lambda **kw: kw["slave"])
    return fake


# --- the rule itself ---------------------------------------------------------------------------


def test_a_dead_process_of_this_host_is_dead_at_once(dead_holder):
    assert holder_here(dead_holder)
    assert holder_dead(dead_holder)


def test_a_live_process_is_not_dead():
    assert not holder_dead(holder_name())
    assert not holder_dead(process_name(os.getppid()))


def test_a_reused_pid_is_another_process():
    node, pid, start = holder_name().split(":")
    assert holder_dead(f"{node}:{pid}:{int(start) - 500}")  # same pid, started earlier: gone


def test_another_hosts_holder_or_an_unreadable_name_cannot_be_judged_here(dead_holder):
    _, pid, start = dead_holder.split(":")
    elsewhere = f"{OTHER_HOST}:{pid}:{start}"
    assert not holder_here(elsewhere)
    assert not holder_dead(elsewhere)
    for name in ("", "0f" * 16, "garbage", f"{heartbeat._node()}:x:1"):
        assert not holder_dead(name)


def test_each_process_names_itself(monkeypatch):
    """Another process's own name is the one this process reads for its pid; a forked worker
    (another pid) names itself, not the parent whose name it inherited in memory."""
    child, name = _worker()
    try:
        assert name == process_name(child.pid)
    finally:
        child.kill()
        child.wait()
        child.stdout.close()
    parent = holder_name()
    monkeypatch.setattr(heartbeat.os, "getpid", os.getppid)
    assert holder_name() == process_name(os.getppid()) != parent
    assert len(lease_holder()) <= SchedulerLease._meta.get_field("holder").max_length
    assert len(parent) <= Job._meta.get_field("runtime_holder").max_length


@pytest.mark.django_db
def test_a_cluster_restarted_with_the_same_sentinel_pid_still_recovers(
    django_capture_on_commit_callbacks, recorded_tasks, monkeypatch
):
    """In a container the restarted cluster's sentinel gets the same pid every time: its
    start time tells the new cluster from the killed one."""
    from jobs.execution.reconcile import recovery_request

    monkeypatch.setattr("os.getppid", lambda: 4242)
    for started in (100, 100, 250):
        monkeypatch.setattr(heartbeat, "_started", lambda pid, started=started: started)
        with django_capture_on_commit_callbacks(execute=True):
            recovery_request(proc_name="Process-1:1")
    assert tasks_named(recorded_tasks, "jobs.tasks.recover") == [(), ()]


# --- job claims (launch, stop, halt) -----------------------------------------------------------


@pytest.mark.django_db
def test_a_dead_holders_claim_is_stale_and_taken_at_once(submit, slave, settings, dead_holder):
    settings.PORTAL_RECOVERY_GRACE_S = 15
    now = timezone.now()
    job = place(
        submit(), slave, "STARTING", age_s=1, runtime_heartbeat=now, runtime_holder=dead_holder
    )
    assert runtime_work_stale(job, now)
    assert _claim(job)
    job.refresh_from_db()
    assert job.runtime_holder == holder_name()
    # A second task that read the job before: the dead holder's name no longer matches.
    late = Job.objects.get(pk=job.pk)
    late.runtime_holder = dead_holder
    assert not _claim(late)


@pytest.mark.django_db
def test_a_live_holders_claim_is_kept(submit, slave, settings):
    settings.PORTAL_RECOVERY_GRACE_S = 15
    now = timezone.now()
    job = place(
        submit(), slave, "HALTING", age_s=1, runtime_heartbeat=now, runtime_holder=holder_name()
    )
    assert not runtime_work_stale(job, now, unclaimed_ok=True)
    assert not _claim(job)


@pytest.mark.django_db
def test_another_hosts_claim_waits_the_grace_period(submit, slave, settings, dead_holder):
    settings.PORTAL_RECOVERY_GRACE_S = 15
    elsewhere = f"{OTHER_HOST}:{dead_holder.split(':', 1)[1]}"
    beat = timezone.now() - timedelta(seconds=10)
    job = place(
        submit(), slave, "STARTING", age_s=11, runtime_heartbeat=beat, runtime_holder=elsewhere
    )
    assert not runtime_work_stale(job, beat + timedelta(seconds=14.9))
    assert not _claim(job)
    assert runtime_work_stale(job, beat + timedelta(seconds=15))
    Job.objects.filter(pk=job.pk).update(runtime_heartbeat=beat - timedelta(seconds=6))
    job.refresh_from_db()
    assert _claim(job)


@pytest.mark.django_db
def test_periodic_reconcile_redrives_a_dead_holders_work_at_once(
    django_capture_on_commit_callbacks, submit, slave, engine, recorded_tasks, dead_holder
):
    now = timezone.now()
    starting = place(
        submit(), slave, "STARTING", age_s=1, runtime_heartbeat=now, runtime_holder=dead_holder
    )
    halting = place(
        submit(), slave, "HALTING", age_s=1, runtime_heartbeat=now, runtime_holder=dead_holder
    )
    Job.objects.filter(pk=halting.pk).update(container_id=engine.add(halting))
    live = place(
        submit(), slave, "STARTING", age_s=1, runtime_heartbeat=now, runtime_holder=holder_name()
    )
    recorded_tasks.clear()
    with django_capture_on_commit_callbacks(execute=True):
        reconcile_all()  # not a starting cluster: no unclaimed_ok
    assert tasks_named(recorded_tasks, LAUNCH) == [(starting.pk,)]
    assert tasks_named(recorded_tasks, HALT) == [(halting.pk,)]
    assert live.pk not in {args[0] for args in tasks_named(recorded_tasks, LAUNCH)}


@pytest.mark.django_db
def test_recovery_does_not_wait_for_claims_of_this_host(
    django_capture_on_commit_callbacks, submit, slave, engine, recorded_tasks, monkeypatch,
    dead_holder,
):  # fmt: skip
    from jobs.execution.reconcile import _claims_stale_in, recovery_run

    now = timezone.now()
    job = place(
        submit(), slave, "STARTING", age_s=1, runtime_heartbeat=now, runtime_holder=dead_holder
    )
    place(submit(), slave, "STARTING", age_s=1, runtime_heartbeat=now, runtime_holder=holder_name())
    SchedulerLease.objects.update_or_create(
        id=1, defaults={"holder": f"{dead_holder}:abc", "acquired_at": now}
    )
    assert _claims_stale_in() == 0
    slept = []
    monkeypatch.setattr("time.sleep", slept.append)
    recorded_tasks.clear()
    with django_capture_on_commit_callbacks(execute=True):
        recovery_run()
    assert slept == []
    assert tasks_named(recorded_tasks, LAUNCH) == [(job.pk,)]
    assert tasks_named(recorded_tasks, TICK) == [()]
    # Another host's claim is waited for: stale one grace period after its last beat.
    place(
        submit(),
        slave,
        "STARTING",
        age_s=1,
        runtime_heartbeat=now,
        runtime_holder=f"{OTHER_HOST}:1:2",
    )
    assert 13 < _claims_stale_in() <= 15


# --- the tick lease ----------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_dead_holders_tick_lease_is_taken_at_once(settings, dead_holder):
    settings.PORTAL_TICK_LEASE_S = 60
    assert lease_acquire_or_request_rerun(holder=f"{dead_holder}:0123456789ab")
    SchedulerLease.objects.filter(pk=1).update(rerun_requested=True)
    assert lease_acquire_or_request_rerun(holder="next") is True
    row = SchedulerLease.objects.get()
    assert (row.holder, row.rerun_requested) == ("next", False)


@pytest.mark.django_db
def test_a_live_holders_tick_lease_is_kept(settings):
    settings.PORTAL_TICK_LEASE_S = 60
    mine = lease_holder()
    assert lease_acquire_or_request_rerun(holder=mine)
    assert lease_acquire_or_request_rerun(holder="next") is False
    row = SchedulerLease.objects.get()
    assert (row.holder, row.rerun_requested) == (mine, True)


@pytest.mark.django_db
def test_another_hosts_tick_lease_waits_until_stale(settings, dead_holder):
    settings.PORTAL_TICK_LEASE_S = 60
    elsewhere = f"{OTHER_HOST}:{dead_holder.split(':', 1)[1]}:0123456789ab"
    assert lease_acquire_or_request_rerun(holder=elsewhere)
    assert lease_acquire_or_request_rerun(holder="next") is False
    later = timezone.now() + timedelta(seconds=61)
    assert lease_acquire_or_request_rerun(holder="next", now=later) is True
