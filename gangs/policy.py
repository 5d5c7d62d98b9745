"""The completion policy of a multi-task OpenPAI job and the gang's summary states (pure)."""

from __future__ import annotations

from dataclasses import dataclass

from jobs.states import PENDING, TERMINAL, JobStatus

# A gang's summary states: in progress (its current attempt's tasks are pending or running),
# or how it ended.
GANG_ACTIVE = JobStatus.QUEUED
GANG_FINAL: frozenset[str] = frozenset(
    {JobStatus.FINISHED, JobStatus.FAILED, JobStatus.CANCELLED, JobStatus.HALTED}
)


def task_job_name(job_name: str, role: str, index: int) -> str:
    """``<jobName>-<role>-<index>``: the task's name as an ordinary job (gpulab-cli jobs)."""
    return f"{job_name}-{role}-{index}"


# --- completion policy (pure) --------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    status: str  # FINISHED, FAILED, CANCELLED or HALTED
    reason: str


def gang_outcome(
    roles: list[dict], tasks: list[tuple[str, str]], *, started: bool = True
) -> Outcome | None:
    """How the gang ends now, or None while it goes on.

    ``roles``: the config's taskRoles (name, taskNumber, minFailedTaskCount,
    minSucceededTaskCount); ``tasks``: (role, status) of every task of the attempt;
    ``started``: the attempt's tasks were started together (before that, a task that ended
    fails the attempt whatever the counts: the others cannot start without it).
    A cancelled task (maxDuration, an admin) cancels the gang and a halted one halts it; then
    failures are looked at before successes, so a tick that sees both fails the gang.
    """
    for role, status in tasks:
        if status == JobStatus.CANCELLED:
            return Outcome(JobStatus.CANCELLED, f"task of role {role} was cancelled")
    for role, status in tasks:
        if status == JobStatus.HALTED:
            return Outcome(JobStatus.HALTED, f"task of role {role} was halted")
    failed = {r["name"]: 0 for r in roles}
    succeeded = {r["name"]: 0 for r in roles}
    for role, status in tasks:
        if status == JobStatus.FAILED:
            failed[role] = failed.get(role, 0) + 1
        elif status == JobStatus.FINISHED:
            succeeded[role] = succeeded.get(role, 0) + 1
    for r in roles:
        wanted = r.get("minFailedTaskCount")
        if wanted is not None and failed[r["name"]] >= wanted:
            return Outcome(
                JobStatus.FAILED,
                f"{failed[r['name']]} task(s) of role {r['name']} failed "
                f"(minFailedTaskCount {wanted})",
            )
    for r in roles:
        wanted = r.get("minSucceededTaskCount")
        if wanted is not None and succeeded[r["name"]] >= wanted:
            return Outcome(
                JobStatus.FINISHED,
                f"{succeeded[r['name']]} task(s) of role {r['name']} succeeded "
                f"(minSucceededTaskCount {wanted})",
            )
    if tasks and all(status in TERMINAL for _, status in tasks):
        # null minFailedTaskCount: "the job always succeeds regardless of any task failure";
        # null minSucceededTaskCount: it succeeds once every task completed.
        bad = sum(failed.values())
        return Outcome(
            JobStatus.FINISHED,
            "all tasks completed"
            + (f" ({bad} failed, no minFailedTaskCount reached)" if bad else ""),
        )
    if any(status in TERMINAL for _, status in tasks) and (
        not started or any(status in PENDING for _, status in tasks)
    ):
        # A task ended (notAfter passed, its container could not be created...) while others
        # never started: the gang can no longer start whole.
        return Outcome(JobStatus.FAILED, "a task ended before all tasks of the gang could start")
    return None
