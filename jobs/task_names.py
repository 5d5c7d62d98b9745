"""The dotted paths of every background task, in one place.

django-q2 stores these strings in its queue and schedules, so a task keeps its path across
releases: rename a function in ``jobs.tasks`` only together with its constant here (and a
migration of stored schedules). Code that fires or schedules a task imports the constant;
``core.tasks.fire`` resolves the path when it is fired, and a test resolves every one, so a
typo fails the fast tests instead of a worker in production.

The apps above jobs keep their own (notifications/task_names.py: the e-mail and delivery tasks,
``jobs.tasks.job_notify`` and ``jobs.tasks.job_deliver`` until issue 25; portal/moved_tasks.py
keeps the old paths running).
"""

SCHEDULER_TICK = "jobs.tasks.scheduler_tick"
JOB_LAUNCH = "jobs.tasks.job_launch"
JOB_FINISH = "jobs.tasks.job_finish"
JOB_STOP = "jobs.tasks.job_stop"
JOB_HALT = "jobs.tasks.job_halt"
RECONCILE = "jobs.tasks.reconcile"
# A task of a multi-task OpenPAI job ended: the gang's completion and retry policies.
GANG_UPDATE = "jobs.tasks.gang_update"
# Fired once when a q cluster starts (jobs/execution/reconcile.py): re-drive what a crash left behind.
RECOVER = "jobs.tasks.recover"
OUTPUTS_PURGE = "jobs.tasks.outputs_purge"

ALL = (
    SCHEDULER_TICK,
    JOB_LAUNCH,
    JOB_FINISH,
    JOB_STOP,
    JOB_HALT,
    RECONCILE,
    RECOVER,
    OUTPUTS_PURGE,
    GANG_UPDATE,
)
