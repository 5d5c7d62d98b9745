"""A gang's host port found taken when one of its tasks started (issue 24 item 7).

The portal chooses the numbers of a gang's ``beginAt`` 0 ports (``gangs.launch``) and
hands them to every task before any starts (``PAI_PORT_LIST_*``, ``PAI_TASK_ROLE_*_HOST_LIST``):
a task whose port turns out to be taken on its slave's machine (another engine on it, another
installation) cannot move to another port alone, its peers already know the old one. So the
task fails with a reason naming the port (``port_clash_reason``), and ``gang_update`` puts the
gang back in the queue whole, as a new attempt that is not counted as a retry
(``requeue_for_port_clash``); the next attempts' ports avoid every port found taken and every
port of the attempts that were re-queued (``ports_to_avoid``). A port the user fixed
(``beginAt`` > 0) is the user's: that task just fails, as any task that cannot start.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gangs.models import JobGang
from gangs.openpai_config import role_ports
from gangs.policy import Outcome
from jobs.models import Job
from jobs.states import JobStatus

# A gang goes back to the queue this many times at most for taken ports; after that a task
# that cannot start fails as any other (the completion policy and retryCount decide).
PORT_REQUEUES_MAX = 5

_REASON = re.compile(r"host ports? ([\d, ]+) chosen by the portal for this gang")


def portal_chosen_ports(job: Job) -> set[int]:
    """The host ports of a gang task that the portal chose (its role's ``beginAt`` 0 ports):
    every port in its request's ``portMappings`` but the role's fixed ranges."""
    if job.gang_id is None or not job.openpai_config:
        return set()
    roles = {r["name"]: r for r in job.openpai_config.get("taskRoles") or ()}
    role = roles.get(job.task_role)
    if role is None:
        return set()
    fixed = {
        p
        for item in role_ports(role)
        if item["hostPorts"][0] is not None
        for p in item["hostPorts"]
    }
    published = {
        int(m["hostPort"])
        for m in (job.request.get("docker") or {}).get("portMappings") or ()
        if isinstance(m, dict) and m.get("hostPort") is not None
    }
    return published - fixed


def port_clash_reason(ports: list[int], slave: str, cause: str) -> str:
    """Why a gang task could not start, in words ``ports_of_reason`` reads back."""
    named = ", ".join(str(p) for p in sorted(ports))
    which = f"host port {named}" if len(ports) == 1 else f"host ports {named}"
    taken = "is taken" if len(ports) == 1 else "one of them is taken"
    return (
        f"{which} chosen by the portal for this gang: {taken} on slave {slave} ({cause}); "
        "the gang goes back to the queue whole, on other ports"
    )


def ports_of_reason(reason: str) -> set[int]:
    """The ports a task's end reason says were chosen by the portal and found taken."""
    match = _REASON.search(reason or "")
    if not match:
        return set()
    return {int(p) for p in re.findall(r"\d+", match.group(1))}


def ports_to_avoid(gang: JobGang) -> set[int]:
    """The host ports the gang's next attempt must not get: every port an earlier attempt
    found taken, and every port of an attempt re-queued for that. Its other tasks were being
    started at the same moment; one whose stop came before its container may still publish
    its port until reconcile removes that container."""
    avoid: set[int] = set()
    for record in gang.attempts or ():
        if not record.get("portsTaken"):
            continue
        avoid.update(int(p) for p in record["portsTaken"])
        for task in record.get("tasks") or ():
            avoid.update(int(p) for p in task.get("ports") or () if p is not None)
    return avoid


def port_requeues(gang: JobGang) -> int:
    """How many attempts ended in a re-queue for a taken port (not counted as retries)."""
    return sum(1 for record in gang.attempts or () if record.get("portsTaken"))


@dataclass(frozen=True)
class PortRequeue:
    outcome: Outcome
    ports: frozenset[int]
    why: str  # the next attempt's first event says it


def requeue_for_port_clash(gang: JobGang, tasks: list[Job]) -> PortRequeue | None:
    """The attempt ends and the gang goes back to the queue whole when one of its tasks could
    not start on a port the portal chose; None otherwise (or once PORT_REQUEUES_MAX is
    reached, when the completion policy judges that failure as any other)."""
    if gang.cancelled_by_user or port_requeues(gang) >= PORT_REQUEUES_MAX:
        return None
    taken: set[int] = set()
    slaves: set[str] = set()
    for task in tasks:
        if task.status == JobStatus.FAILED and (ports := ports_of_reason(task.end_reason)):
            taken |= ports
            slaves.add(task.slave.name if task.slave is not None else "?")
    if not taken:
        return None
    named = ", ".join(str(p) for p in sorted(taken))
    where = ", ".join(sorted(slaves))
    return PortRequeue(
        outcome=Outcome(
            JobStatus.FAILED,
            f"host port(s) {named} chosen by the portal found taken on {where} when a task "
            "started: back to the queue whole, on other ports (not counted as a retry)",
        ),
        ports=frozenset(taken),
        why=f"re-queued whole: host port(s) {named} found taken on {where}, this attempt "
        "gets other ports; not counted as a retry",
    )
