"""Multi-task OpenPAI jobs ("gangs"), one floor above jobs: OpenPAI job configs, a JobGang whose
tasks are ordinary Jobs, and OpenPAI's routes and pages (docs/openpai.md).

jobs never imports this app: it asks for what it needs through registries and signals that
gangs fills and connects at ready() (``hooks``: every hook point in one place). What lives here,
and who calls it:

- ``openpai_config`` (no Django): a config's validation and normalisation, its expansion into
  tasks; ``openpai_submit``: a config submitted as one job or as a gang (the "openpai" document
  kind jobs' submit hands it to); ``create``: the gang beside its tasks at submit;
- ``policy`` (pure): the completion policy: per role ``minFailedTaskCount`` failed tasks fail
  the gang, ``minSucceededTaskCount`` succeeded tasks succeed it, null keeps OpenPAI's meaning
  (never fail / succeed once every task completed);
- ``launch.gang_tasks_assigned`` (``jobs.signals.gang_tasks_assigned``, inside the tick's
  transaction that assigned the tasks): checks the whole gang is assigned, allocates each
  task's ``portList`` ports on its slave, writes the peers' PAI_* variables into every task's
  request, then fires the launches. A gang that is not whole goes back to the queue;
- ``completion.gang_update`` (``jobs.signals.gang_task_ended``): a task of the gang ended:
  applies the completion policy, stops the remaining tasks, records the attempt and starts a new
  one when ``retryCount`` allows (never after a user's cancel); ``gang_recheck_all`` is its
  safety net after each reconcile;
- ``whole``: a user's cancel, hold, release or delete of one task acts on the whole gang (jobs'
  action registry hands them here after its permission check), a halt halts every task;
- ``ports`` (a portal-chosen port found taken: the gang re-queued whole), ``authfile``,
  ``debug`` (isDebug), ``resubmit`` (a copy), ``summary`` and ``listing`` (API and pages).

Every job status change goes through ``jobs.transitions.job_transition``; the gang's own
``status`` is a summary written here only, under a row lock on the gang.
"""
