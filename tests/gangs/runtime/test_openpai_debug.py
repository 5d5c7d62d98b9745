"""OpenPAI's jobEnvs.isDebug on the scripted engine: a failed task's container is kept for
PORTAL_OPENPAI_DEBUG_KEEP_S, then removed by reconcile (gangs/debug.py)."""

from datetime import timedelta

import pytest

from clusters.services import engine_for
from jobs.execution.container_spec import LABEL_JOB
from jobs.execution.reconcile import reconcile_all
from jobs.models import JobEvent
from jobs.states import JobStatus
from tests.gangs.runtime.test_openpai_gang import (
    _commands,
    config,
    finish,
    role,
    run,
    statuses,
    two_slaves,
)

pytestmark = pytest.mark.django_db
__all__ = ["_commands", "two_slaves"]  # the fixtures, used by name


def containers_of(task) -> list:
    with engine_for(task.slave) as engine:
        return engine.find_by_label(LABEL_JOB, str(task.uuid))


def test_a_failed_tasks_container_is_kept_then_removed(people, two_slaves, settings):
    settings.PORTAL_OPENPAI_DEBUG_KEEP_S = 600
    doc = config(role("worker", 2, minFailedTaskCount=1), name="dbg", jobEnvs={"isDebug": True})
    tasks = run(people, doc)
    assert statuses(tasks) == [JobStatus.RUNNING] * 2
    finish(tasks[0], 3)
    assert statuses(tasks) == [JobStatus.FAILED, JobStatus.CANCELLED]
    failed, stopped = tasks
    assert len(containers_of(failed)) == 1  # kept for inspection
    assert containers_of(stopped) == []  # a stopped task is not a failed one: removed
    kept = JobEvent.objects.filter(job=failed, message__startswith="container kept for inspection")
    assert kept.count() == 1 and "(jobEnvs.isDebug)" in kept.get().message
    # The task's room is free meanwhile: the container exited.
    assert failed.status == JobStatus.FAILED and failed.ended_at is not None
    reconcile_all(now=failed.ended_at + timedelta(seconds=590))
    assert len(containers_of(failed)) == 1
    reconcile_all(now=failed.ended_at + timedelta(seconds=601))
    assert containers_of(failed) == []
    assert JobEvent.objects.filter(
        job=failed, message__startswith="debug container removed"
    ).exists()


def test_without_is_debug_a_failed_container_is_removed_at_once(people, two_slaves):
    tasks = run(people, config(role("worker", 2, minFailedTaskCount=1), name="nodbg"))
    finish(tasks[0], 3)
    assert statuses(tasks) == [JobStatus.FAILED, JobStatus.CANCELLED]
    assert containers_of(tasks[0]) == []
