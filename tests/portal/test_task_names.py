"""Every task path is a constant that resolves; firing a misspelt one fails at once."""

import pytest

from accounts import task_names as accounts_task_names
from core import tasks
from interactive import task_names as interactive_task_names
from jobs import task_names
from notifications import task_names as notifications_task_names
from portal import schedules

# Each app's task names, and how many it has.
TASK_NAMES = [
    (task_names, 9),
    (notifications_task_names, 3),
    (accounts_task_names, 1),
    (interactive_task_names, 2),
]


@pytest.mark.parametrize("names, count", TASK_NAMES, ids=lambda v: getattr(v, "__name__", v))
def test_every_task_name_resolves_to_a_function(names, count):
    constants = {
        name: value
        for name, value in vars(names).items()
        if name.isupper() and isinstance(value, str)
    }
    assert set(constants.values()) == set(names.ALL)
    assert len(names.ALL) == len(set(names.ALL)) == count
    for path in names.ALL:
        assert callable(tasks.resolve(path)), path
        assert path.split(".")[0] == names.__name__.split(".")[0]  # its own app's tasks


def test_modules_that_fire_tasks_use_the_constants():
    from importlib import import_module

    from gangs import launch as gang_launch
    from interactive import lifecycle
    from jobs import system_actions, transitions, wakeups
    from jobs.execution import reconcile, watcher
    from notifications import job_emails, notices, subscriptions

    apply = import_module("jobs.scheduler_bridge.apply")

    used = {
        apply.LAUNCH_TASK,
        reconcile.LAUNCH_TASK,
        reconcile.STOP_TASK,
        reconcile.HALT_TASK,
        reconcile.RECOVER_TASK,
        system_actions.STOP_TASK,
        system_actions.HALT_TASK,
        watcher.FINISH_TASK,
        wakeups.SCHEDULER_TICK_TASK,
        job_emails.NOTIFY_TASK,
        subscriptions.DELIVER_TASK,
        notices.NOTICE_DELIVER_TASK,
        transitions.GANG_UPDATE_TASK,
        gang_launch.LAUNCH_TASK,
        lifecycle.WARNING_MAIL_TASK,
        *(path for path, _ in schedules.PERIODIC.values()),
    }
    assert used == {path for names, _ in TASK_NAMES for path in names.ALL}
    assert set(tasks.task_timeouts()) <= set(task_names.ALL)


@pytest.mark.parametrize(
    "path", ["jobs.tasks.job_finnish", "jobs.taks.job_finish", "job_finish", "jobs.tasks.log"]
)
def test_firing_a_misspelt_task_fails_in_record_mode(settings, recorded_tasks, path):
    settings.PORTAL_TASK_MODE = "record"
    with pytest.raises(tasks.UnknownTask, match="does not resolve|not callable"):
        tasks.fire(path, 1)
    assert recorded_tasks == []
