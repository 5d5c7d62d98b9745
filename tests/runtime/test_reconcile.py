"""Reconcile on the scripted engine: missed exits, vanished containers, strays, lost slaves."""

import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from clusters.runtime.spec import ContainerSpec
from clusters.services import engine_for
from jobs.execution.container_spec import LABEL_INSTANCE, LABEL_JOB, LABEL_SLAVE
from jobs.execution.reconcile import reconcile_all
from jobs.models import Job
from jobs.user_actions.services import job_cancel
from tests.support.runtime import (
    SHARED_COMMANDS,
    TEST_IMAGE,
    add_slave,
    containers_of,
    job_doc,
    log_text,
    submit,
)
from tests.support.scripted_engine import Behaviour

pytestmark = pytest.mark.django_db

COMMANDS = {
    **SHARED_COMMANDS,
    "sh -c 'echo quick; sleep 300'": Behaviour(output=["quick"], runs_for=300),
}


@pytest.fixture(autouse=True)
def _commands(scripted_engines):
    scripted_engines.script(COMMANDS)


def running(people, command="sleep 300", **extra) -> Job:
    job = submit(people, job_doc(command, **extra))
    job.refresh_from_db()
    assert job.status == "RUNNING", job.end_reason
    return job


def stray(engine, job_uuid, instance, command=("sleep", "300"), *, slave_id=None) -> str:
    """A container labelled as a job's of ``instance`` on the slave ``slave_id``."""
    labels = {LABEL_JOB: job_uuid, LABEL_INSTANCE: instance}
    if slave_id is not None:
        labels[LABEL_SLAVE] = str(slave_id)
    return engine.run(ContainerSpec(image=TEST_IMAGE, command=command, labels=labels))


def test_finishes_exits_nobody_saw(people, slave, engine):
    ok = running(people, "sh -c 'echo quick; sleep 300'")
    bad = running(people)
    engine.finish(ok.container_id, 0)
    engine.finish(bad.container_id, 5)
    ok.refresh_from_db()
    assert ok.status == "RUNNING"  # no watcher in these tests: nobody saw the exit
    reconcile_all()
    ok.refresh_from_db()
    bad.refresh_from_db()
    assert ok.status == "FINISHED" and "quick" in log_text(ok)
    assert bad.status == "FAILED" and bad.exit_code == 5
    assert containers_of(slave, ok) == [] and containers_of(slave, bad) == []


def test_finishes_an_exit_of_a_container_the_job_never_recorded(people, slave, engine):
    job = running(people)
    Job.objects.filter(pk=job.pk).update(container_id="")
    engine.finish(job.container_id, 0)
    reconcile_all()
    job.refresh_from_db()
    assert job.status == "FINISHED"


def test_an_exit_before_a_lost_launch_recorded_running_is_run_then_ended(people, slave, engine):
    """The launch's worker died after the start, before it recorded RUNNING, and the container
    has exited since: reconcile re-drives the launch (which adopts the container) rather than
    ending a STARTING job itself, so the job still goes RUNNING, then ends by its exit code."""
    job = running(people)
    Job.objects.filter(pk=job.pk).update(
        status="STARTING",
        container_id="",
        runtime_heartbeat=None,
        status_updated=timezone.now() - timedelta(seconds=60),
    )
    engine.finish(job.container_id, 4)
    seen = job.events.order_by("-id").values_list("id", flat=True).first()
    reconcile_all()
    job.refresh_from_db()
    assert (job.status, job.exit_code) == ("FAILED", 4)
    after = job.events.filter(id__gt=seen).exclude(new_state="").order_by("id")
    assert list(after.values_list("new_state", flat=True)) == ["RUNNING", "FAILED"]
    assert containers_of(slave, job) == []


def test_fails_jobs_whose_container_vanished(people, slave, engine):
    job = running(people)
    engine.remove(job.container_id)
    reconcile_all()
    job.refresh_from_db()
    assert job.status == "FAILED"
    assert job.end_reason == "the container disappeared from the slave"


def test_a_launch_still_within_its_grace_period_is_left_alone(people, slave, engine):
    job = running(people)
    engine.remove(job.container_id)
    Job.objects.filter(pk=job.pk).update(container_id="")
    reconcile_all()
    assert Job.objects.get(pk=job.pk).status == "RUNNING"
    reconcile_all(now=timezone.now() + timedelta(minutes=6))
    assert Job.objects.get(pk=job.pk).status == "FAILED"


def test_a_cancelling_job_whose_container_is_gone_is_cancelled(people, slave, engine, runtime):
    user, _ = people
    job = running(people)
    runtime.PORTAL_TASK_MODE = "record"  # the stop task is lost
    job_cancel(job=job, user=user)
    engine.remove(job.container_id)
    runtime.PORTAL_TASK_MODE = "inline"
    reconcile_all()
    job.refresh_from_db()
    assert job.status == "CANCELLED"


def test_removes_strays_of_its_own_instance_only(people, slave, engine, runtime):
    ended = running(people, "sleep 300")
    engine.finish(ended.container_id, 0)
    reconcile_all()
    ended.refresh_from_db()
    assert ended.status == "FINISHED"
    mine = runtime.PORTAL_INSTANCE
    unknown = stray(engine, str(uuid.uuid4()), mine, slave_id=slave.pk)
    of_ended = stray(engine, str(ended.uuid), mine, slave_id=slave.pk)
    exited_of_ended = stray(engine, str(ended.uuid), mine, ("true",), slave_id=slave.pk)
    not_a_uuid = stray(engine, "not-a-uuid", mine, slave_id=slave.pk)
    other_portal = stray(engine, str(uuid.uuid4()), "another-portal", slave_id=slave.pk)
    other_slave = stray(engine, str(uuid.uuid4()), mine, slave_id=slave.pk + 1000)
    unlabelled_slave = stray(engine, str(uuid.uuid4()), mine)  # from before slave labels
    reconcile_all()
    left = {c.id for c in engine.list_by_labels({})}
    assert left == {other_portal, other_slave, unlabelled_slave}
    assert {unknown, of_ended, exited_of_ended, not_a_uuid}.isdisjoint(left)
    warnings = list(ended.events.filter(type="Warning").values_list("message", flat=True))
    assert warnings == [f"stopped stray container {of_ended[:12]} on {slave.name}"]


def test_a_stray_that_cannot_be_removed_stays_for_the_next_round(people, slave, engine, runtime):
    container = stray(engine, str(uuid.uuid4()), runtime.PORTAL_INSTANCE, slave_id=slave.pk)
    engine.fail_next("remove")
    reconcile_all()
    assert engine.inspect(container).running
    reconcile_all()
    assert engine.list_by_labels({}) == []


def test_cannot_list_containers_changes_nothing(people, slave, engine):
    job = running(people)
    engine.finish(job.container_id, 0)
    engine.fail_next("list")
    reconcile_all()
    assert Job.objects.get(pk=job.pk).status == "RUNNING"


def test_slave_lost_after_the_grace_period(people, slave, engine, runtime):
    plain = running(people)
    restartable = running(people, scheduling__restartable=True)
    engine.set_unreachable()
    reconcile_all()
    slave.refresh_from_db()
    assert slave.online is False and "unreachable" in slave.offline_reason
    for job in (plain, restartable):
        job.refresh_from_db()
        assert job.status == "RUNNING"  # within the grace period it may still be running
    later = slave.offline_since + timedelta(seconds=runtime.PORTAL_SLAVE_LOST_GRACE_S + 1)
    reconcile_all(now=later)
    for job in (plain, restartable):
        job.refresh_from_db()
        assert job.status == "FAILED" and job.end_reason.startswith("slave lost: mem")
    follow = Job.objects.get(restart_of=restartable)
    assert follow.restart_count == 1 and follow.status in ("QUEUED", "ASSIGNED", "RUNNING")
    assert not Job.objects.filter(restart_of=plain).exists()


def test_a_cancelling_job_on_a_lost_slave_is_cancelled(people, slave, engine, runtime):
    user, _ = people
    job = running(people)
    engine.set_unreachable()
    job_cancel(job=job, user=user)
    reconcile_all()
    slave.refresh_from_db()
    later = slave.offline_since + timedelta(seconds=runtime.PORTAL_SLAVE_LOST_GRACE_S + 1)
    reconcile_all(now=later)
    job.refresh_from_db()
    assert job.status == "CANCELLED" and "slave lost" in job.end_reason


def test_one_broken_slave_does_not_stop_the_others(people, slave, engine):
    # Slaves are reconciled by name: the broken one comes first.
    broken = add_slave("a-broken", f"fake://broken-{uuid.uuid4().hex[:8]}", gpus=0)
    job = running(people)
    engine.finish(job.container_id, 0)
    crashed = []

    def crash():
        crashed.append(True)
        raise ValueError("a bug in reconcile")

    with engine_for(broken) as broken_engine:
        broken_engine.before_next("list", crash)
        reconcile_all()
    assert crashed == [True]
    assert Job.objects.get(pk=job.pk).status == "FINISHED"
