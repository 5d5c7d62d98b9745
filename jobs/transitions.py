"""The one service through which every job status changes.

Compare-and-swap on the status column: ``UPDATE ... WHERE pk = ? AND status = <old>``. Two
workers racing on the same job both try; exactly one update matches. Losing is a normal outcome
(the caller sees ``False``), never an exception.
"""

from datetime import datetime

from django.db import transaction
from django.utils import timezone

from jobs.models import Job, JobEvent
from jobs.states import is_allowed
from portal.errors import Conflict
from portal.timefmt import utc_z


class TransitionNotAllowed(Conflict):
    def __init__(self, current: str, target: str):
        super().__init__(f"a job in state {current} cannot become {target}")
        self.current = current
        self.target = target


def job_transition(
    *,
    job: Job,
    to: str,
    message: str = "",
    fields: dict | None = None,
    now: datetime | None = None,
    event_type: str = JobEvent.Type.STATUS_CHANGE,
) -> bool:
    """Move ``job`` from its current (in-memory) status to ``to``.

    ``fields`` are other columns written in the same UPDATE (assignment, exit code, ...).
    Returns True when this call made the change; False when another writer changed the job
    first (the in-memory job is then refreshed). Raises TransitionNotAllowed for a move the
    state machine forbids.
    """
    current = job.status
    if not is_allowed(current, to):
        raise TransitionNotAllowed(current, to)
    now = now or timezone.now()
    event_times = dict(job.event_times or {})
    event_times[to] = utc_z(now)
    event_times["statusUpdated"] = utc_z(now)
    values = {"status": to, "status_updated": now, "event_times": event_times, **(fields or {})}
    with transaction.atomic():
        won = Job.objects.filter(pk=job.pk, status=current).update(**values) == 1
        if won:
            JobEvent.objects.create(
                job=job, time=now, type=event_type, new_state=to, message=message[:5000]
            )
    if won:
        for name, value in values.items():
            setattr(job, name, value)
    else:
        job.refresh_from_db()
    return won


def job_event_add(*, job: Job, message: str, type: str = JobEvent.Type.INFO, now=None) -> JobEvent:
    """Append a message to the job's history (shown by `debug` and on the job page)."""
    return JobEvent.objects.create(
        job=job, time=now or timezone.now(), type=type, message=message[:5000]
    )
