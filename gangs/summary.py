"""What pages and the API show of a gang (GET /api/portal/gangs/<id>/, the job page)."""

from __future__ import annotations

from gangs.models import JobGang
from gangs.policy import GANG_ACTIVE
from jobs.models import Job
from jobs.states import HOLDS_RESOURCES, JobStatus

# --- what pages and the API show ---------------------------------------------------------


def gang_summary(gang: JobGang) -> dict:
    """The gang's roles x tasks of its current attempt (state, slave, ports, exit code) and
    its ended attempts, JSON-ready (GET /api/portal/gangs/<uuid>/ and the job page)."""
    tasks = list(
        Job.objects.filter(gang=gang, gang_attempt=gang.attempt)
        .select_related("slave")
        .order_by("task_role", "task_index")
    )
    by_role: dict[str, list[Job]] = {}
    for task in tasks:
        by_role.setdefault(task.task_role, []).append(task)
    states = [t.status for t in tasks]
    live = gang.status
    if gang.status == GANG_ACTIVE and any(s in HOLDS_RESOURCES for s in states):
        live = JobStatus.RUNNING
    elif gang.status == GANG_ACTIVE and states and all(s == JobStatus.ONHOLD for s in states):
        live = JobStatus.ONHOLD
    return {
        "uuid": str(gang.uuid),
        "name": gang.name,
        "status": live,
        "attempt": gang.attempt,
        "retryCount": gang.retry_count,
        "endReason": gang.end_reason,
        "taskCounts": {state: states.count(state) for state in sorted(set(states))},
        "roles": [
            {
                "name": role["name"],
                "taskNumber": role["taskNumber"],
                "minFailedTaskCount": role["minFailedTaskCount"],
                "minSucceededTaskCount": role["minSucceededTaskCount"],
                "tasks": [
                    {
                        "name": t.name,
                        "uuid": str(t.uuid),
                        "index": t.task_index,
                        "state": t.status,
                        "slave": t.slave.name if t.slave is not None else None,
                        "ports": [
                            m.get("hostPort")
                            for m in t.request["docker"].get("portMappings") or ()
                            if m.get("hostPort") is not None
                        ],
                        "exitCode": t.exit_code,
                    }
                    for t in by_role.get(role["name"], [])
                ],
            }
            for role in gang.config["taskRoles"]
        ],
        "attempts": gang.attempts,
        # Resubmitted copies (gangs.resubmit): the gang this one copies, and its copies.
        "copyOf": _link(gang.copy_of) if gang.copy_of is not None else None,
        "copies": [_link(copy) for copy in gang.copies.order_by("created", "id")],
    }


def _link(gang: JobGang) -> dict:
    """A gang as a link: its uuid, name and first task of its current attempt (its page)."""
    first = (
        Job.objects.filter(gang=gang, gang_attempt=gang.attempt)
        .order_by("id")
        .values_list("uuid", flat=True)
        .first()
    )
    return {"uuid": str(gang.uuid), "name": gang.name, "firstTask": str(first) if first else None}
