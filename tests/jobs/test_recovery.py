"""Runtime robustness and crash recovery on an in-memory engine (issue 10 items 2, 3 and 9).

A launch that raises never leaves a job STARTING; reconcile re-drives every state whose work a
killed worker may have lost (never launching twice); a job that exits on its own while being
halted ends by its own exit code. The same drills with a real ``kill -9`` of the q cluster are
in tests/integration/test_fault_drills.py.
"""

import itertools
from datetime import timedelta

import pytest
from django.utils import timezone

from clusters.runtime.engine import ContainerState
from clusters.runtime.errors import ContainerNotFound, ContainerNotRunning, RuntimeFailure
from jobs.execution.reconcile import reconcile_all
from jobs.execution.runs import (
    _claim,
    job_finish_run,
    job_halt_run,
    job_launch_run,
    job_stop_run,
    runtime_work_stale,
)
from jobs.models import Job
from jobs.states import HOLDS_RESOURCES

pytestmark = pytest.mark.django_db

LAUNCH, STOP, HALT = "jobs.tasks.job_launch", "jobs.tasks.job_stop", "jobs.tasks.job_halt"
TICK = "jobs.tasks.scheduler_tick"


class FakeEngine:
    """The engine calls the runtime makes, on dicts. ``on_signal(container, name)`` lets a
    test decide what the job's process does with a signal."""

    ids = itertools.count(1)

    def __init__(self):
        self.containers: dict[str, dict] = {}
        self.created = 0
        self.hide_once = False  # find_by_label misses once: two launches racing
        self.on_signal = None
        self.signals: list[str] = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None

    def add(self, job, *, running=True, exit_code=None) -> str:
        cid = f"c{next(self.ids):04d}" + "0" * 60
        self.containers[cid] = {
            "name": f"gpuportal-{job.uuid}",
            "labels": {"gpuportal.job": str(job.uuid), "gpuportal.instance": "gpuportal"},
            "running": running,
            "exit_code": exit_code,
        }
        self.created += 1
        return cid

    def exit(self, cid, code):
        self.containers[cid].update(running=False, exit_code=code)

    def _state(self, cid) -> ContainerState:
        c = self.containers[cid]
        return ContainerState(
            id=cid, name=c["name"], status="running" if c["running"] else "exited",
            running=c["running"], exit_code=c["exit_code"], oom_killed=False,
            started_at=timezone.now(), finished_at=None if c["running"] else timezone.now(),
            labels=dict(c["labels"]),
        )  # fmt: skip

    def list_by_labels(self, labels):
        if self.hide_once:
            self.hide_once = False
            return []
        return [
            self._state(cid)
            for cid, c in self.containers.items()
            if all(c["labels"].get(k) == v for k, v in labels.items())
        ]

    def find_by_label(self, key, value):
        return self.list_by_labels({key: value})

    def image_present(self, ref):
        return True

    def run(self, spec):
        if any(c["name"] == spec.name for c in self.containers.values()):
            raise RuntimeFailure("create: Conflict. The name is already in use", permanent=True,
                                 status_code=409)  # fmt: skip
        cid = f"c{next(self.ids):04d}" + "0" * 60
        self.containers[cid] = {
            "name": spec.name, "labels": dict(spec.labels), "running": True, "exit_code": None,
        }  # fmt: skip
        self.created += 1
        return cid

    def start(self, cid):
        self.containers[cid]["running"] = True

    def inspect(self, cid):
        if cid not in self.containers:
            raise ContainerNotFound(f"no such container {cid}")
        return self._state(cid)

    def signal(self, cid, name):
        if not self.containers[cid]["running"]:
            raise ContainerNotRunning("is not running")
        self.signals.append(name)
        if self.on_signal:
            self.on_signal(cid, name)

    def wait(self, cid, *, timeout_s):
        if self.containers[cid]["running"]:
            raise RuntimeFailure("wait: read timed out", permanent=False)
        return self.containers[cid]["exit_code"]

    def kill(self, cid):
        if self.containers[cid]["running"]:
            self.exit(cid, 137)

    def stop(self, cid, *, timeout_s):
        if self.containers[cid]["running"]:
            self.exit(cid, 143)

    def remove(self, cid, *, force=True):
        self.containers.pop(cid, None)

    def logs(self, cid, **kwargs):
        return b"log\n"

    def log_frames(self, cid, **kwargs):
        return [(1, b"log\n")]

    def running_for(self, job) -> list[str]:
        return [
            cid
            for cid, c in self.containers.items()
            if c["labels"]["gpuportal.job"] == str(job.uuid)
        ]


@pytest.fixture
def commit(django_capture_on_commit_callbacks):
    """``with commit():`` runs what was fired on commit (the test is one transaction)."""
    return lambda: django_capture_on_commit_callbacks(execute=True)


@pytest.fixture
def engine(monkeypatch, settings):
    settings.PORTAL_RECOVERY_GRACE_S = 15
    settings.PORTAL_HALT_GRACE_S = 1
    fake = FakeEngine()
    for module in ("jobs.execution.runs", "jobs.execution.reconcile"):
        monkeypatch.setattr(f"{module}.engine_for", lambda slave: fake)
    monkeypatch.setattr("jobs.execution.reconcile.slave_probe", lambda **kw: kw["slave"])
    return fake


def place(job, slave, status, *, age_s=0, **fields):
    """Put ``job`` in ``status`` on ``slave`` as if it got there ``age_s`` seconds ago."""
    when = timezone.now() - timedelta(seconds=age_s)
    Job.objects.filter(pk=job.pk).update(
        status=status, status_updated=when, slave=slave, gpu_ids=[0], cpu_ids=[0], **fields
    )
    job.refresh_from_db()
    return job


def tasks_named(recorded, name):
    return [args for path, args in recorded if path == name]


# --- item 2: no exception leaves a job STARTING -----------------------------------------------


def test_unsplittable_command_fails_the_launch_and_frees_the_room(
    commit, submit, slave, engine, recorded_tasks
):
    job = submit()
    request = job.request
    request["docker"]["command"] = "sh -c 'echo hi"  # stored before submit checked commands
    Job.objects.filter(pk=job.pk).update(request=request)
    job = place(job, slave, "ASSIGNED")
    recorded_tasks.clear()
    with commit():
        job_launch_run(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == "FAILED"
    assert "could not start" in job.end_reason and "No closing quotation" in job.end_reason
    assert job.status not in HOLDS_RESOURCES  # the scheduler counts held ids by status
    assert tasks_named(recorded_tasks, TICK)  # the freed GPU is offered again
    assert engine.containers == {}


def test_any_exception_in_the_launch_fails_the_job(commit, submit, slave, engine, monkeypatch):
    job = place(submit(), slave, "ASSIGNED")

    def broken(*args, **kwargs):
        raise KeyError("storage")

    monkeypatch.setattr("jobs.execution.runs._prepare_storage", broken)
    with commit():
        job_launch_run(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == "FAILED" and "KeyError" in job.end_reason


# --- item 3: re-drive, never twice --------------------------------------------------------------


def test_assigned_job_whose_launch_was_lost_is_launched_again(
    commit, submit, slave, engine, recorded_tasks
):
    job = place(submit(), slave, "ASSIGNED", age_s=20)
    recorded_tasks.clear()
    with commit():
        reconcile_all()
    assert tasks_named(recorded_tasks, LAUNCH) == [(job.pk,)]
    with commit():
        job_launch_run(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == "RUNNING" and len(engine.running_for(job)) == 1


def test_young_assigned_job_waits_for_its_own_launch(commit, submit, slave, engine, recorded_tasks):
    job = place(submit(), slave, "ASSIGNED", age_s=2)
    recorded_tasks.clear()
    with commit():
        reconcile_all()
    assert tasks_named(recorded_tasks, LAUNCH) == []
    # A q cluster that has just started knows the task may be lost: at once (a duplicate is
    # settled by the ASSIGNED -> STARTING compare-and-swap).
    with commit():
        reconcile_all(unclaimed_ok=True)
    assert tasks_named(recorded_tasks, LAUNCH) == [(job.pk,)]


def test_starting_job_of_a_killed_worker_adopts_its_container(
    commit, submit, slave, engine, recorded_tasks
):
    stale = timezone.now() - timedelta(seconds=40)
    job = place(submit(), slave, "STARTING", age_s=40, runtime_heartbeat=stale)
    engine.add(job, running=False)  # created, never started: the worker died in between
    engine.containers[next(iter(engine.containers))]["exit_code"] = None
    recorded_tasks.clear()
    with commit():
        reconcile_all()
    assert tasks_named(recorded_tasks, LAUNCH) == [(job.pk,)]
    with commit():
        job_launch_run(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == "RUNNING"
    assert engine.created == 1 and len(engine.running_for(job)) == 1


def test_starting_job_with_a_live_worker_is_left_alone(
    commit, submit, slave, engine, recorded_tasks
):
    job = place(submit(), slave, "STARTING", age_s=300, runtime_heartbeat=timezone.now())
    recorded_tasks.clear()
    with commit():
        reconcile_all(unclaimed_ok=True)
    assert tasks_named(recorded_tasks, LAUNCH) == []
    job_launch_run(job_id=job.pk)  # a duplicate task: the claim is held, nothing happens
    job.refresh_from_db()
    assert job.status == "STARTING" and engine.created == 0


def test_two_racing_launches_make_one_container(commit, submit, slave, engine):
    """Both found no container; the second create hits the fixed name (409) and adopts."""
    job = place(submit(), slave, "ASSIGNED")
    first = engine.add(job)
    engine.hide_once = True
    with commit():
        job_launch_run(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == "RUNNING" and job.container_id == first
    assert engine.created == 1


def test_cancelling_job_whose_container_runs_on_is_stopped_again(
    commit, submit, slave, engine, recorded_tasks
):
    job = place(submit(), slave, "CANCELLING", age_s=30, end_reason="cancelled by alice")
    cid = engine.add(job)
    Job.objects.filter(pk=job.pk).update(container_id=cid)
    recorded_tasks.clear()
    with commit():
        reconcile_all()
    assert tasks_named(recorded_tasks, STOP) == [(job.pk,)]
    job_stop_run(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == "CANCELLED" and engine.containers == {}


def test_a_stop_in_progress_is_not_doubled(commit, submit, slave, engine, recorded_tasks):
    job = place(submit(), slave, "CANCELLING", age_s=30)
    cid = engine.add(job)
    Job.objects.filter(pk=job.pk).update(container_id=cid, runtime_heartbeat=timezone.now())
    recorded_tasks.clear()
    with commit():
        reconcile_all()
    assert tasks_named(recorded_tasks, STOP) == []
    job_stop_run(job_id=job.pk)
    assert engine.containers[cid]["running"]  # the live stopper owns it


def test_musthalt_job_whose_halt_was_lost_is_halted(commit, submit, slave, engine, recorded_tasks):
    job = place(submit(), slave, "MUSTHALT", age_s=30)
    cid = engine.add(job)
    Job.objects.filter(pk=job.pk).update(container_id=cid)
    engine.on_signal = lambda c, name: engine.exit(c, 123)
    recorded_tasks.clear()
    with commit():
        reconcile_all()
    assert tasks_named(recorded_tasks, HALT) == [(job.pk,)]
    job_halt_run(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == "HALTED" and engine.signals == ["SIGUSR1"]


def test_halting_job_of_a_killed_worker_is_halted_again(
    commit, submit, slave, engine, recorded_tasks
):
    stale = timezone.now() - timedelta(seconds=40)
    job = place(submit(), slave, "HALTING", age_s=40, runtime_heartbeat=stale)
    cid = engine.add(job)
    Job.objects.filter(pk=job.pk).update(container_id=cid)
    engine.on_signal = lambda c, name: engine.exit(c, 123)
    recorded_tasks.clear()
    with commit():
        reconcile_all()
    assert tasks_named(recorded_tasks, HALT) == [(job.pk,)]
    job_halt_run(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == "HALTED" and job.exit_code == 123


def test_recovery_is_asked_once_per_starting_cluster(commit, db, recorded_tasks, monkeypatch):
    from jobs.execution.reconcile import recovery_request

    monkeypatch.setattr("os.getppid", lambda: 4242)  # the workers' sentinel
    with commit():
        asked = [recovery_request(proc_name=f"Process-1:{n}") for n in range(4)]
    assert asked == [True, False, False, False]
    assert tasks_named(recorded_tasks, "jobs.tasks.recover") == [()]
    monkeypatch.setattr("os.getppid", lambda: 4343)  # a restarted cluster
    with commit():
        assert recovery_request(proc_name="Process-1:1") is True


def test_recovery_redrives_at_once_and_asks_for_a_tick(
    commit, submit, slave, engine, recorded_tasks
):
    from jobs.execution.reconcile import recovery_run

    job = place(submit(), slave, "ASSIGNED", age_s=1)
    recorded_tasks.clear()
    with commit():
        recovery_run(wait=False)
    assert tasks_named(recorded_tasks, LAUNCH) == [(job.pk,)]
    assert tasks_named(recorded_tasks, TICK)


def test_queue_retries_sooner_than_before_and_after_the_timeout(settings):
    from core.tasks import task_timeout

    q = settings.Q_CLUSTER
    assert q["timeout"] < q["retry"] <= 90
    assert task_timeout(LAUNCH) >= 600  # a pull of a big image fits
    assert task_timeout(HALT) > settings.PORTAL_HALT_GRACE_S


# --- item 9: halt races ---------------------------------------------------------------------


# A job that ends as the signal arrives ended *after* it: seed 001's rule applies (only 123 is
# HALTED, any other code FAILED). An end before the signal keeps its own exit code: the table in
# tests/jobs/test_halt_outcomes.py.
NOT_OBEYED = "halt procedure not obeyed: exit code {} after SIGUSR1 (only 123 means halted)"


@pytest.mark.parametrize(
    "code,status,reason",
    [
        (0, "FAILED", NOT_OBEYED.format(0)),
        (1, "FAILED", NOT_OBEYED.format(1)),
        (123, "HALTED", "halted"),
    ],
)
def test_job_that_exits_at_the_halt_signal_ends_by_the_seeds_rule(
    submit, slave, engine, code, status, reason
):
    job = place(submit(), slave, "RUNNING")
    cid = engine.add(job)
    Job.objects.filter(pk=job.pk).update(container_id=cid)
    place(job, slave, "MUSTHALT")
    engine.on_signal = lambda c, name: engine.exit(c, code)  # it was ending anyway
    job_halt_run(job_id=job.pk)
    job.refresh_from_db()
    assert (job.status, job.exit_code, job.end_reason) == (status, code, reason)


def test_finish_seen_by_the_watcher_during_the_halt_is_not_a_disobeyed_halt(submit, slave, engine):
    job = place(submit(), slave, "HALTING", runtime_heartbeat=timezone.now())
    cid = engine.add(job, running=False, exit_code=0)
    Job.objects.filter(pk=job.pk).update(container_id=cid)
    job_finish_run(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == "FINISHED" and "not obeyed" not in job.end_reason


def test_job_killed_after_the_halt_grace_did_not_obey(submit, slave, engine):
    job = place(submit(), slave, "MUSTHALT")
    cid = engine.add(job)
    Job.objects.filter(pk=job.pk).update(container_id=cid)
    job_halt_run(job_id=job.pk)  # ignores SIGUSR1: the fake's wait times out
    job.refresh_from_db()
    assert job.status == "FAILED" and job.exit_code == 137
    assert job.end_reason.startswith("halt procedure not obeyed")


def test_job_that_exits_137_by_itself_during_a_halt_is_not_called_disobedient(
    submit, slave, engine
):
    job = place(submit(), slave, "HALTING", runtime_heartbeat=timezone.now())
    cid = engine.add(job, running=False, exit_code=137)
    Job.objects.filter(pk=job.pk).update(container_id=cid)
    job_finish_run(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == "FAILED" and job.end_reason == "exit code 137"


def test_a_launch_in_progress_is_never_re_driven(submit, slave, engine, monkeypatch):
    """The claim written with STARTING is this phase's claim, even for a starting cluster."""
    job = place(submit(), slave, "ASSIGNED")
    seen = []

    def launching(job):
        current = Job.objects.get(pk=job.pk)
        seen.append(runtime_work_stale(current, timezone.now(), unclaimed_ok=True))
        seen.append(_claim(current))  # a duplicate launch task
        raise RuntimeFailure("stop here", permanent=True)

    monkeypatch.setattr("jobs.execution.runs._launch_with_retries", launching)
    job_launch_run(job_id=job.pk)
    assert seen == [False, False]


def test_recovery_waits_only_until_the_killed_workers_claims_are_stale(
    commit, submit, slave, engine, recorded_tasks, monkeypatch
):
    from jobs.execution.reconcile import recovery_run

    beat = timezone.now() - timedelta(seconds=10)  # killed 10 s ago: stale in 5 s
    place(submit(), slave, "STARTING", age_s=10, runtime_heartbeat=beat)
    slept = []
    monkeypatch.setattr("time.sleep", slept.append)
    recorded_tasks.clear()
    with commit():
        recovery_run()
    assert 4 < slept[0] < 6.5
    assert tasks_named(recorded_tasks, TICK) == [(), ()]


def test_a_spawning_q_worker_asks_for_recovery(commit, db, recorded_tasks):
    from django_q.signals import post_spawn

    with commit():
        post_spawn.send(sender="django_q", proc_name="Process-1:1")
    assert tasks_named(recorded_tasks, "jobs.tasks.recover") == [()]


def test_reconcile_schedule_runs_under_its_own_time_limit(db):
    import ast

    from django_q.models import Schedule

    from portal.schedules import schedules_ensure

    schedules_ensure()
    kwargs = ast.literal_eval(Schedule.objects.get(func="jobs.tasks.reconcile").kwargs)
    assert kwargs["q_options"]["timeout"] > 60


def test_a_failing_recovery_request_never_stops_a_worker_from_spawning(db, monkeypatch):
    from jobs.execution.reconcile import recovery_request

    def broken(*args, **kwargs):
        raise RuntimeError("database is locked")

    monkeypatch.setattr("jobs.models.SchedulerLease.objects.get_or_create", broken)
    assert recovery_request(proc_name="Process-1:1") is False
