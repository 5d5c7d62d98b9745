"""Multi-task OpenPAI jobs ("gangs"): one JobGang, its tasks ordinary Jobs (docs/openpai.md).

What lives here, and who calls it:

- ``gang_outcome``: the completion policy (pure): per role ``minFailedTaskCount`` failed tasks
  fail the gang, ``minSucceededTaskCount`` succeeded tasks succeed it, null keeps OpenPAI's
  meaning (never fail / succeed once every task completed);
- ``gang_tasks_assigned``: called by the scheduler bridge (``jobs.scheduling.apply``) inside
  the transaction that assigned the tasks: checks the whole gang is assigned, allocates each
  task's ``portList`` ports on its slave, writes the peers' PAI_* variables into every task's
  request, then fires the launches. A gang that is not whole goes back to the queue;
- ``gang_update``: a task of the gang ended (fired by ``jobs.transitions``): applies the
  completion policy, stops the remaining tasks, records the attempt and starts a new one when
  ``retryCount`` allows (never after a user's cancel);
- ``gang_cancel``/``gang_halt``/``gang_hold``/``gang_release``/``gang_delete``: a user's action
  on one task acts on the whole gang (``jobs.services`` hands them here);
- ``gang_summary``: roles x tasks and attempts, for the API and the job page.

Modules: ``policy`` (pure), ``launch``, ``lifecycle``, ``actions``, ``summary``.

Every job status change goes through ``jobs.transitions.job_transition``; the gang's own
``status`` is a summary written here only, under a row lock on the gang.
"""

from jobs.gang.actions import (
    gang_cancel,
    gang_delete,
    gang_halt,
    gang_hold,
    gang_info,
    gang_release,
    gang_tasks,
)
from jobs.gang.launch import LAUNCH_TASK, gang_tasks_assigned, peer_environment, slave_address
from jobs.gang.lifecycle import gang_recheck_all, gang_task_stop, gang_update
from jobs.gang.policy import GANG_ACTIVE, GANG_FINAL, Outcome, gang_outcome, task_job_name
from jobs.gang.summary import gang_summary

__all__ = [
    "GANG_ACTIVE",
    "GANG_FINAL",
    "LAUNCH_TASK",
    "Outcome",
    "gang_cancel",
    "gang_delete",
    "gang_halt",
    "gang_hold",
    "gang_info",
    "gang_outcome",
    "gang_recheck_all",
    "gang_release",
    "gang_summary",
    "gang_task_stop",
    "gang_tasks",
    "gang_tasks_assigned",
    "gang_update",
    "peer_environment",
    "slave_address",
    "task_job_name",
]
