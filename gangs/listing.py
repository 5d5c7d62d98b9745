"""How the web's jobs list and Live > Slaves show gang tasks (docs/openpai.md, "Pages").

The jobs list shows a multi-task job as one row (``jobs.selectors.gang_row_only`` keeps
the first task of the current attempt); ``gang_rows_annotate`` gives that row the gang's name and
task counts. Live > Slaves names the task holding a GPU (``gang_task_label``).
"""

from __future__ import annotations

from collections import Counter

from gangs.models import JobGang
from jobs.models import Job
from jobs.states import JobStatus

# The word a state has in a row's task counts ("4 tasks: 3 running, 1 done"), in this order.
_WORDS = [
    (JobStatus.RUNNING, "running"),
    (JobStatus.ASSIGNED, "starting"),
    (JobStatus.STARTING, "starting"),
    (JobStatus.QUEUED, "queued"),
    (JobStatus.ONHOLD, "on hold"),
    (JobStatus.FINISHED, "done"),
    (JobStatus.FAILED, "failed"),
    (JobStatus.CANCELLING, "stopping"),
    (JobStatus.CANCELLED, "cancelled"),
    (JobStatus.MUSTHALT, "halting"),
    (JobStatus.HALTING, "halting"),
    (JobStatus.HALTED, "halted"),
    (JobStatus.DELETED, "deleted"),
]
_ORDER = {word: i for i, (_, word) in enumerate(_WORDS)}
_WORD: dict[str, str] = dict(_WORDS)


def task_counts_text(statuses: list[str]) -> str:
    """``4 tasks: 3 running, 1 done`` for the states of a gang's tasks."""
    words = Counter(_WORD.get(s, s.lower()) for s in statuses)
    parts = [f"{n} {w}" for w, n in sorted(words.items(), key=lambda i: _ORDER.get(i[0], 99))]
    total = len(statuses)
    return f"{total} task{'s' if total != 1 else ''}: " + ", ".join(parts)


def gang_rows_annotate(jobs: list[Job]) -> None:
    """Give each gang task of ``jobs`` (rows of the jobs list) ``ui_gang``: the gang's name,
    task counts of its current attempt and their text, and its attempt. Two queries."""
    gang_ids = {job.gang_id for job in jobs if job.gang_id}
    if not gang_ids:
        return
    gangs = {g.pk: g for g in JobGang.objects.filter(pk__in=gang_ids)}
    statuses: dict[int, list[str]] = {}
    rows = Job.objects.filter(gang_id__in=gang_ids).values_list("gang_id", "gang_attempt", "status")
    for gang_id, attempt, status in rows.order_by("id"):
        if attempt == gangs[gang_id].attempt:
            statuses.setdefault(gang_id, []).append(status)
    for job in jobs:
        gang = gangs.get(job.gang_id) if job.gang_id is not None else None
        if gang is None:
            continue
        states = statuses.get(gang.pk, [])
        job.ui_gang = {
            "name": gang.name,
            "uuid": str(gang.uuid),
            "attempt": gang.attempt,
            "tasks": len(states),
            "counts_text": task_counts_text(states),
        }


def gang_task_label(job: Job) -> str:
    """``gang pai, role worker, task 1`` for a gang task (what Live > Slaves shows on a GPU
    it holds), "" for any other job."""
    if job.gang is None:
        return ""
    return f"gang {job.gang.name}, role {job.task_role}, task {job.task_index}"
