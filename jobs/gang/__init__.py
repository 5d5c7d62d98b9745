"""Multi-task OpenPAI jobs ("gangs"): one JobGang, its tasks ordinary Jobs (docs/openpai.md).

What lives here, and who calls it:

- ``gang_outcome``: the completion policy (pure): per role ``minFailedTaskCount`` failed tasks
  fail the gang, ``minSucceededTaskCount`` succeeded tasks succeed it, null keeps OpenPAI's
  meaning (never fail / succeed once every task completed);
- ``gang_tasks_assigned``: called by the scheduler bridge (``jobs.scheduler_bridge.apply``) inside
  the transaction that assigned the tasks: checks the whole gang is assigned, allocates each
  task's ``portList`` ports on its slave, writes the peers' PAI_* variables into every task's
  request, then fires the launches. A gang that is not whole goes back to the queue;
- ``gang_update``: a task of the gang ended (fired by ``jobs.transitions``): applies the
  completion policy, stops the remaining tasks, records the attempt and starts a new one when
  ``retryCount`` allows (never after a user's cancel);
- ``gang_cancel``/``gang_halt``/``gang_hold``/``gang_release``/``gang_delete``: a user's action
  on one task acts on the whole gang (``jobs.actions.services`` hands them here);
- ``gang_summary``: roles x tasks and attempts, for the API and the job page.

Modules (the package imports none of them: import from the module): ``policy`` (pure),
``create`` (the gang and its tasks at submit), ``launch``, ``lifecycle``, ``whole`` (actions
on the whole gang, without permission checks: ``jobs.actions.services`` checks them first),
``summary``.

Every job status change goes through ``jobs.transitions.job_transition``; the gang's own
``status`` is a summary written here only, under a row lock on the gang.
"""
