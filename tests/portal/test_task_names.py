"""Every task path is a constant that resolves; firing a misspelt one fails at once."""

import pytest

from core import tasks
from jobs import task_names
from portal import schedules


def test_every_task_name_resolves_to_a_function():
    constants = {
        name: value
        for name, value in vars(task_names).items()
        if name.isupper() and isinstance(value, str)
    }
    assert set(constants.values()) == set(task_names.ALL)
    assert len(task_names.ALL) == len(set(task_names.ALL)) == 11
    for path in task_names.ALL:
        assert callable(tasks.resolve(path)), path


def test_modules_that_fire_tasks_use_the_constants():
    from importlib import import_module

    from gangs import launch as gang_launch
    from jobs import transitions
    from jobs.lifecycle import actions, notifications, subscriptions
    from jobs.runtime import reconcile, recovery, watcher
    from jobs.scheduler_bridge import ticks

    apply = import_module("jobs.scheduler_bridge.apply")

    used = {
        apply.LAUNCH_TASK,
        reconcile.LAUNCH_TASK,
        reconcile.STOP_TASK,
        reconcile.HALT_TASK,
        recovery.RECOVER_TASK,
        actions.STOP_TASK,
        actions.HALT_TASK,
        watcher.FINISH_TASK,
        ticks.SCHEDULER_TICK_TASK,
        notifications.NOTIFY_TASK,
        subscriptions.DELIVER_TASK,
        transitions.GANG_UPDATE_TASK,
        gang_launch.LAUNCH_TASK,
        *(path for path, _ in schedules.PERIODIC.values()),
    }
    assert used == set(task_names.ALL)
    assert set(tasks.task_timeouts()) <= set(task_names.ALL)


@pytest.mark.parametrize(
    "path", ["jobs.tasks.job_finnish", "jobs.taks.job_finish", "job_finish", "jobs.tasks.log"]
)
def test_firing_a_misspelt_task_fails_in_record_mode(settings, recorded_tasks, path):
    settings.PORTAL_TASK_MODE = "record"
    with pytest.raises(tasks.UnknownTask, match="does not resolve|not callable"):
        tasks.fire(path, 1)
    assert recorded_tasks == []
