"""Writing a cycle's decisions through the system actions (never the user actions), with
compare-and-swap transitions."""

import logging
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime

from django.db import connection, transaction
from django.utils import timezone

from clusters.models import Slave
from core.errors import Conflict
from core.faults import crash_point
from core.tasks import fire
from core.timefmt import utc_z
from jobs import task_names
from jobs.models import Job, JobEvent, JobExplanation
from jobs.scheduler import model as sm
from jobs.scheduler_bridge.bulk_writes import (
    keys_in,
    keys_locked,
    rows_delete,
    rows_update,
    rows_upsert,
)
from jobs.signals import gang_tasks_assigned, job_status_changed, signal_send_after_commit
from jobs.states import FINISHED as ENDED
from jobs.states import HOLDS_RESOURCES, JobStatus, is_allowed
from jobs.system_actions import job_cancel_by_system, job_halt_by_system
from jobs.transitions import TransitionNotAllowed, job_ended, transition_reason

log = logging.getLogger(__name__)
LAUNCH_TASK = task_names.JOB_LAUNCH


@dataclass(frozen=True)
class TransitionRequest:
    job: Job
    to: str
    message: str = ""
    fields: dict | None = None


def job_transition_many(
    *, requests: list[TransitionRequest], now: datetime | None = None
) -> list[bool]:
    """``jobs.transitions.job_transition`` for the many jobs of one tick, in one transaction:
    the same allowed moves, event times, events and ``job_ended``; no notification (the
    callers ask for the few that have one).

    Lock-then-write instead of one compare-and-swap UPDATE per row (a round trip each, for
    thousands of jobs): the rows still in their expected status are locked (``SELECT ... FOR
    UPDATE`` on PostgreSQL; SQLite's IMMEDIATE transactions serialise writers), so nobody can
    move them before this transaction commits; all winners are written with one bulk UPDATE
    (``bulk_writes.rows_update``) and their events with ``bulk_create``. Losers are not
    refreshed (the caller skips them).
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
            reason = transition_reason(job.status, request.to, request.message)
            job.event_times = {**(job.event_times or {}), request.to: stamp, "statusUpdated": stamp}
            job.status, job.status_updated = request.to, now
            for name, value in (request.fields or {}).items():
                setattr(job, name, value)
                columns.add(name)
            changed.append(job)
            events.append(
                JobEvent(
                    job=job,
                    time=now,
                    type=JobEvent.Type.STATUS_CHANGE,
                    new_state=request.to,
                    message=request.message[:5000],
                )
            )
            if reason is not None:  # after the status change, as job_transition writes it
                events.append(JobEvent(job=job, time=now, type=reason[0], message=reason[1]))
        if changed:
            names = sorted(columns)
            attname = {field.name: field.attname for field in Job._meta.concrete_fields}
            rows_update(
                Job,
                key="id",
                names=names,
                rows=[[job.pk, *(getattr(job, attname[n]) for n in names)] for job in changed],
            )
        JobEvent.objects.bulk_create(events)  # in this order: the history's ids ascend with it
        for job in changed:
            if job.status in ENDED:
                job_ended(job)
    return won


def _held_ids(slave_ids: list[int]) -> dict[int, tuple[set[int], set[int]]]:
    """GPU and CPU ids held right now on each of these slaves (one query)."""
    held: dict[int, tuple[set[int], set[int]]] = {pk: (set(), set()) for pk in slave_ids}
    rows = Job.objects.filter(slave_id__in=slave_ids, status__in=HOLDS_RESOURCES).values_list(
        "slave_id", "gpu_ids", "cpu_ids"
    )
    for slave_id, gpu_ids, cpu_ids in rows:
        held[slave_id][0].update(gpu_ids)
        held[slave_id][1].update(cpu_ids)
    return held


def apply_starts(
    starts: list[sm.Start], jobs: dict[str, Job], now: datetime, gang_uuids: frozenset = frozenset()
) -> int:
    """Assign jobs to slaves in one transaction that locks the slaves involved.

    The lock (``SELECT ... FOR UPDATE`` on PostgreSQL, in primary-key order so two ticks never
    deadlock; SQLite serialises writers anyway) plus the check of ids held on each slave at
    that moment means that even two ticks that somehow both run can never hand out the same
    GPU or CPU; the status compare-and-swap means never the same job.
    """

    names = {start.slave for start in starts}
    requests: list[TransitionRequest] = []
    with transaction.atomic():
        slaves = {
            s.name: s
            for s in Slave.objects.select_for_update()
            .filter(name__in=names)
            .only("pk", "name")
            .order_by("pk")
        }
        held = _held_ids([s.pk for s in slaves.values()])
        for start in starts:
            job, slave = jobs.get(start.job_id), slaves.get(start.slave)
            if job is None or slave is None or job.status != JobStatus.QUEUED:
                continue  # a stale decision: another tick (or a cancel) got there first
            held_gpus, held_cpus = held[slave.pk]
            if held_gpus & set(start.gpu_ids) or held_cpus & set(start.cpu_ids):
                log.warning("tick: %s would reuse held ids on %s; skipped", job.uuid, slave)
                continue
            held_gpus.update(start.gpu_ids)
            held_cpus.update(start.cpu_ids)
            requests.append(
                TransitionRequest(
                    job=job,
                    to=JobStatus.ASSIGNED,
                    message=f"assigned to {slave.name}, GPUs {list(start.gpu_ids)}",
                    fields={
                        "slave": slave,
                        "gpu_ids": list(start.gpu_ids),
                        "cpu_ids": list(start.cpu_ids),
                        "ignoring_reservation_ids": sorted(start.ignoring_reservation_ids),
                        "borrowed": start.borrowed,
                    },
                )
            )
        won = job_transition_many(requests=requests, now=now)
        if any(won):  # a fault drill's kill -9 between the commit and the launch enqueue
            transaction.on_commit(lambda: crash_point("after_assign"))
        # A job that starts no longer waits: its explanation goes (one DELETE).
        rows_delete(
            JobExplanation,
            keys=[request.job.pk for request, ok in zip(requests, won, strict=True) if ok],
        )
        # ``gang_uuids``: tasks of multi-task jobs among the queued rows of the snapshot.
        gang_tasks = {
            r.job.pk
            for r, ok in zip(requests, won, strict=True)
            if ok and str(r.job.uuid) in gang_uuids
        }
        for request, ok in zip(requests, won, strict=True):
            if ok and request.job.pk not in gang_tasks:
                fire(LAUNCH_TASK, request.job.pk)
        if gang_tasks:
            # Tasks of a gang launch together, once its ports and peers are known: the gangs
            # app launches them (or puts back a gang that is not whole), in this transaction.
            gang_tasks_assigned.send(sender=Job, job_pks=sorted(gang_tasks), now=now)
    return sum(won)


def apply_halts(result: sm.CycleResult, jobs: dict[str, Job], now: datetime) -> None:
    waiting_infos: dict[str, list[dict]] = defaultdict(list)
    for halt in result.halts:
        job = jobs.get(halt.job_id)
        info = halt.halt_info.to_json()
        if job is not None:
            try:
                job_halt_by_system(job=job, halt_info=info, now=now)
            except Conflict:
                continue  # it ended meanwhile: nothing to halt
        for started_uuid in halt.halt_info.started_job_uuids:
            waiting_infos[started_uuid].append(info)
    # "On both sides": the job the room is freed for records the halt too.
    for job_uuid, infos in waiting_infos.items():
        job = jobs.get(job_uuid)
        if job is not None:
            seen = {(i["time"], tuple(i["haltedJobUuids"])) for i in job.halt_events}
            new = [i for i in infos if (i["time"], tuple(i["haltedJobUuids"])) not in seen]
            if new:
                Job.objects.filter(pk=job.pk).update(halt_events=[*job.halt_events, *new])


def apply_fails_and_cancels(result: sm.CycleResult, jobs: dict[str, Job], now: datetime) -> None:
    # One guarded bulk transition for all fails (a full queue can fail hundreds at once).
    requests = [
        TransitionRequest(
            job=job,
            to=JobStatus.FAILED,
            message=fail.reason,
            fields={"end_reason": fail.reason},
        )
        for fail in result.fails
        if (job := jobs.get(fail.job_id)) is not None and job.status == JobStatus.QUEUED
    ]
    with transaction.atomic():
        won = job_transition_many(requests=requests, now=now)
        # The failed job's explanation is its reason (what the job page and API show).
        rows_upsert(
            JobExplanation,
            names=["lines"],
            rows=[[r.job.pk, [r.message]] for r, ok in zip(requests, won, strict=True) if ok],
        )
    # Told once committed, like job_transition's changes (notifications: e-mails, webhooks).
    signal_send_after_commit(
        job_status_changed,
        sender=Job,
        calls=[
            {"job": request.job, "status": JobStatus.FAILED}
            for request, ok in zip(requests, won, strict=True)
            if ok
        ],
    )
    for cancel in result.cancels:
        job = jobs.get(cancel.job_id)
        if job is not None:
            try:
                job_cancel_by_system(job=job, reason=cancel.reason, now=now)
            except Conflict:
                pass


def apply_explanations(result: sm.CycleResult, queued: list[dict]) -> int:
    """Store explanations that changed (unchanged rows are not touched)."""
    rows = []
    for row in queued:
        lines = result.explanations.get(str(row["uuid"]))
        if lines is not None and list(lines) != row["queued_explanations"]:
            rows.append([row["id"], list(lines)])
    # One upsert into the narrow table for thousands of rows; only for jobs still queued (one
    # that started or was cancelled since the snapshot keeps what it has).
    qn = connection.ops.quote_name
    rows_upsert(
        JobExplanation,
        names=["lines"],
        rows=rows,
        where=(
            f"EXISTS (SELECT 1 FROM {qn(Job._meta.db_table)} j "
            f"WHERE j.{qn('id')} = v.c0 AND j.{qn('status')} = '{JobStatus.QUEUED}')"
        ),
    )
    return len(rows)


def apply(result: sm.CycleResult, queued: list[dict], now: datetime) -> dict:
    start_ids = {d.job_id for d in result.starts}
    other_ids = {d.job_id for d in result.decisions} - start_ids
    for halt in result.halts:
        other_ids.update(halt.halt_info.started_job_uuids)
    # Starts need only what the transition writes; loading thousands of full rows (with their
    # request JSON) would cost more than assigning them. They are queued rows of the snapshot,
    # so they are selected by primary key, all keys as one parameter on PostgreSQL.
    pk_of = {str(row["uuid"]): row["id"] for row in queued}
    start_pks = sorted(pk_of[u] for u in start_ids if u in pk_of)
    other_ids.update(u for u in start_ids if u not in pk_of)
    starting = (
        Job.objects.filter(pk__in=keys_in(Job, start_pks)) if start_pks else Job.objects.none()
    )
    jobs = {str(j.uuid): j for j in starting.only("id", "uuid", "status", "event_times")}
    jobs.update(
        (str(j.uuid), j)
        for j in Job.objects.filter(uuid__in=other_ids).select_related("slave", "owner", "project")
    )
    apply_fails_and_cancels(result, jobs, now)
    apply_halts(result, jobs, now)
    gang_uuids = frozenset(str(row["uuid"]) for row in queued if row.get("gang_id") is not None)
    started = apply_starts(list(result.starts), jobs, now, gang_uuids)
    explained = apply_explanations(result, queued)
    return {
        "started": started,
        "halted": len(result.halts),
        "failed": len(result.fails),
        "cancelled": len(result.cancels),
        "explanations_written": explained,
    }
