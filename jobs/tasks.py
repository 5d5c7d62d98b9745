"""django-q2 entry points: a few lines each, load by id, call a service.

Their dotted paths are stored in the task queue: don't rename them lightly.
"""


def scheduler_tick() -> None:
    from jobs.scheduling import tick

    tick()


def job_launch(job_id: int) -> None:
    from jobs.runtime_services import job_launch_run

    job_launch_run(job_id=job_id)


def job_finish(job_id: int) -> None:
    from jobs.runtime_services import job_finish_run

    job_finish_run(job_id=job_id)


def job_stop(job_id: int) -> None:
    from jobs.runtime_services import job_stop_run

    job_stop_run(job_id=job_id)


def job_halt(job_id: int) -> None:
    from jobs.runtime_services import job_halt_run

    job_halt_run(job_id=job_id)


def job_notify(job_id: int, event: str) -> None:
    from jobs.notifications import job_notify_send

    job_notify_send(job_id=job_id, event=event)


def reconcile() -> None:
    from jobs.reconcile import reconcile_all

    reconcile_all()


def recover() -> None:
    from jobs.recovery import recovery_run

    recovery_run()


def gang_update(gang_id: int) -> None:
    from jobs.gang import gang_update as update

    update(gang_id=gang_id)
