"""The one service through which every job status changes.

Compare-and-swap on the status column: ``UPDATE ... WHERE pk = ? AND status = <old>``. Two
workers racing on the same job both try; exactly one update matches. Losing is a normal outcome
(the caller sees ``False``), never an exception.
"""

from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from core.errors import Conflict
from core.tasks import fire
from core.timefmt import utc_z
from jobs import task_names
from jobs.bulk_sql import field_attname, keys_locked, rows_insert, rows_update
from jobs.lifecycle.notifications import job_notify_request
from jobs.models import Job, JobEvent
from jobs.states import FINISHED as ENDED
from jobs.states import JobStatus, is_allowed

GANG_UPDATE_TASK = task_names.GANG_UPDATE


class TransitionNotAllowed(Conflict):
    def __init__(self, current: str, target: str):
        super().__init__(f"a job in state {current} cannot become {target}")
        self.current = current
        self.target = target


def _cas(job: Job, to: str, fields: dict | None, now: datetime) -> dict | None:
    """Compare-and-swap the status; the written values when this call won, else None."""
    current = job.status
    if not is_allowed(current, to):
        raise TransitionNotAllowed(current, to)
    event_times = dict(job.event_times or {})
    event_times[to] = utc_z(now)
    event_times["statusUpdated"] = utc_z(now)
    values = {"status": to, "status_updated": now, "event_times": event_times, **(fields or {})}
    if Job.objects.filter(pk=job.pk, status=current).update(**values) != 1:
        return None
    return values


# gpulab-cli's `debug` prints only the state of a status change, never its message: the reason
# for these changes is also written as a message event, which it prints ("LOG ERROR: ...").
REASON_EVENT_TYPES: dict[str, str] = {
    JobStatus.FAILED: JobEvent.Type.ERROR,
    JobStatus.CANCELLING: JobEvent.Type.INFO,
    JobStatus.CANCELLED: JobEvent.Type.INFO,
    JobStatus.MUSTHALT: JobEvent.Type.WARNING,
}


def _reason(old: str, to: str, message: str) -> tuple[str, str] | None:
    """(event type, message) of the reason event for this change, if it has one."""
    kind = REASON_EVENT_TYPES.get(to)
    if kind is None or not message or (to == JobStatus.CANCELLED and old == JobStatus.CANCELLING):
        return None  # CANCELLED after CANCELLING: the reason was told when cancelling began
    return kind, f"{to}: {message}"[:5000]


def _reason_event(job: Job, old: str, to: str, message: str, now: datetime) -> JobEvent | None:
    reason = _reason(old, to, message)
    if reason is None:
        return None
    return JobEvent(job=job, time=now, type=reason[0], message=reason[1])


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
    now = now or timezone.now()
    old = job.status
    with transaction.atomic():
        values = _cas(job, to, fields, now)
        if values is not None:
            JobEvent.objects.create(
                job=job, time=now, type=event_type, new_state=to, message=message[:5000]
            )
            reason = _reason_event(job, old, to, message, now)
            if reason is not None:
                reason.save()
    if values is None:
        job.refresh_from_db()
        return False
    for name, value in values.items():
        setattr(job, name, value)
    job_notify_request(job=job, event=to)
    if to in ENDED:
        _gang_task_ended(job)
    return True


def _gang_task_ended(job: Job) -> None:
    """A task of a multi-task OpenPAI job ended: its gang applies its completion policy
    (jobs.gang.gang_update), once this transaction commits."""
    gang_id = job.__dict__.get("gang_id", _UNLOADED)
    if gang_id is _UNLOADED:  # loaded with .only(): one small query, ended jobs only
        gang_id = Job.objects.filter(pk=job.pk).values_list("gang_id", flat=True).first()
    if gang_id is not None:
        fire(GANG_UPDATE_TASK, gang_id)


_UNLOADED = object()


EVENT_COLUMNS = ["job", "time", "type", "new_state", "message", "stage"]


@dataclass(frozen=True)
class TransitionRequest:
    job: Job
    to: str
    message: str = ""
    fields: dict | None = None


def _write_rows(jobs: list[Job], names: list[str]) -> None:
    """One ``UPDATE ... FROM (VALUES ...)`` per few thousand rows (``jobs.bulk_sql``): Django's
    bulk_update builds a CASE expression per column and row, and executemany a round trip per
    row on PostgreSQL; both cost seconds for a few thousand jobs."""
    if not jobs:
        return
    attnames = [field_attname(Job, name) for name in names]
    rows_update(
        Job,
        key="id",
        names=names,
        rows=[[job.pk, *(getattr(job, attname) for attname in attnames)] for job in jobs],
    )


def job_transition_many(
    *, requests: list[TransitionRequest], now: datetime | None = None
) -> list[bool]:
    """The same guarded change for many jobs in one transaction (the scheduler's apply step).

    Lock-then-write instead of one compare-and-swap UPDATE per row: the rows still in their
    expected status are locked (``SELECT ... FOR UPDATE`` on PostgreSQL; SQLite's IMMEDIATE
    transactions serialise writers), so nobody can move them before this transaction commits,
    and all winners are written with one bulk UPDATE and their events with one bulk INSERT.
    Losers are not refreshed (the caller skips them).
    """
    now = now or timezone.now()
    stamp = utc_z(now)
    for request in requests:
        if not is_allowed(request.job.status, request.to):
            raise TransitionNotAllowed(request.job.status, request.to)
    by_status: dict[str, list[int]] = {}
    for request in requests:
        by_status.setdefault(request.job.status, []).append(request.job.pk)
    with transaction.atomic():
        still = set()
        for status, ids in by_status.items():
            still |= keys_locked(Job, keys=ids, column="status", value=status)
        won, changed, events, columns = [], [], [], {"status", "status_updated", "event_times"}
        for request in requests:
            job = request.job
            ok = job.pk in still
            won.append(ok)
            if not ok:
                continue
            reason = _reason(job.status, request.to, request.message)
            if reason is not None:
                events.append([job.pk, now, reason[0], "", reason[1], ""])
            job.event_times = {**(job.event_times or {}), request.to: stamp, "statusUpdated": stamp}
            job.status, job.status_updated = request.to, now
            for name, value in (request.fields or {}).items():
                setattr(job, name, value)
                columns.add(name)
            changed.append(job)
            events.append(
                [job.pk, now, JobEvent.Type.STATUS_CHANGE, request.to, request.message[:5000], ""]
            )
        _write_rows(changed, sorted(columns))
        # One INSERT of rows, in this order (the history's ids ascend with it).
        rows_insert(JobEvent, names=EVENT_COLUMNS, rows=events)
        for job in changed:
            if job.status in ENDED:
                _gang_task_ended(job)
    return won


def job_event_add(*, job: Job, message: str, type: str = JobEvent.Type.INFO, now=None) -> JobEvent:
    """Append a message to the job's history (shown by `debug` and on the job page)."""
    return JobEvent.objects.create(
        job=job, time=now or timezone.now(), type=type, message=message[:5000]
    )
