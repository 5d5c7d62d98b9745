"""django-q2 entry points: a few lines each, load by id, call a service.

Their dotted paths are stored in the task queue: don't rename them lightly (jobs/task_names.py).
The services are looked up on their modules when a task runs, so a test that replaces one
replaces it here too.
"""

from jobs.execution import outputs, runs
from jobs.execution import reconcile as execution_reconcile  # the task below is named reconcile
from jobs.models import Job
from jobs.scheduler_bridge import tick as tick_module
from jobs.signals import gang_task_ended


def scheduler_tick() -> None:
    tick_module.tick()


def job_launch(job_id: int) -> None:
    runs.job_launch_run(job_id=job_id)


def job_finish(job_id: int) -> None:
    runs.job_finish_run(job_id=job_id)


def job_stop(job_id: int) -> None:
    runs.job_stop_run(job_id=job_id)


def job_halt(job_id: int) -> None:
    runs.job_halt_run(job_id=job_id)


def reconcile() -> None:
    execution_reconcile.reconcile_all()


def recover() -> None:
    execution_reconcile.recovery_run()


def outputs_purge() -> None:
    outputs.job_outputs_purge()


def gang_update(gang_id: int) -> None:
    # A task of the gang ended: the gangs app applies the gang's completion and retry policies
    # (gangs.completion.gang_update, connected in gangs/apps.py). The task stays here, by this
    # name, because its dotted path is what the queue stores (jobs.transitions fires it).
    gang_task_ended.send(sender=Job, gang_id=gang_id)
