"""Tasks queued under the path they had before they moved above jobs still run
(portal/moved_tasks.py): the q cluster makes the old paths resolve, as django-q2's worker looks
them up, and rewrites stored schedules. The whole path through a real q cluster:
tests/portal/test_qcluster_production.py (a delivery queued as ``jobs.tasks.job_deliver``)."""

import pydoc

import pytest
from django_q.models import Schedule

from jobs import tasks as jobs_tasks
from notifications import task_names as notifications_task_names
from notifications import tasks as notifications_tasks
from portal import moved_tasks


@pytest.fixture
def aliased():
    moved_tasks.moved_tasks_alias()
    yield
    for old in moved_tasks.MOVED_TASKS:
        module_name, _, name = old.rpartition(".")
        if module_name == "jobs.tasks":
            vars(jobs_tasks).pop(name, None)


def test_every_moved_task_points_at_a_task_of_its_new_app():
    # Every old path lands on one of the app's tasks (it has new ones of its own too).
    assert set(moved_tasks.MOVED_TASKS.values()) <= set(notifications_task_names.ALL)
    assert set(moved_tasks.MOVED_TASKS.values()) == {
        "notifications.tasks.job_deliver", "notifications.tasks.job_notify"
    }  # fmt: skip
    for old in moved_tasks.MOVED_TASKS:
        assert pydoc.locate(old) is None, f"{old} is defined again: drop its alias"


def test_the_old_paths_resolve_as_django_q2s_worker_looks_them_up(aliased):
    assert pydoc.locate("jobs.tasks.job_deliver") is notifications_tasks.job_deliver
    assert pydoc.locate("jobs.tasks.job_notify") is notifications_tasks.job_notify


@pytest.mark.django_db
def test_stored_schedules_get_the_new_paths():
    old = Schedule.objects.create(func="jobs.tasks.job_deliver", args="(1, 'FINISHED')")
    other = Schedule.objects.create(func="jobs.tasks.reconcile")
    assert moved_tasks.moved_schedules_rewrite() == 1
    assert Schedule.objects.get(pk=old.pk).func == "notifications.tasks.job_deliver"
    assert Schedule.objects.get(pk=other.pk).func == "jobs.tasks.reconcile"
    assert moved_tasks.moved_schedules_rewrite() == 0
