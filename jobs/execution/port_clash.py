"""A host port found taken when a job's container starts (issue 24 item 7).

Ports are chosen per slave, but a slave's machine may hold other users of its port space
(several engines on one machine, another installation): a port can be taken when the
container starts. That is the portal's problem, unless the user fixed the port. By who chose
the port (``HostPortBusy`` names it):

- Docker (a mapping without ``hostPort``): Docker tries a few of its own picks, then gives up.
  The start is tried again (``PORT_CLASH_STARTS`` in all), Docker picking other ports, and an
  event says which port was taken and which replaced it.
- The portal (an OpenPAI gang task's ``beginAt`` 0 ports, ``gangs.launch``): every peer of
  the gang already knows the number, so the task does not move alone. It fails with a reason
  the gangs app writes and reads back (``run_hooks().port_clash_reason``, ``gangs.ports``), and
  the gang goes back to the queue whole, on other ports.
- The user (a ``portMappings[].hostPort``, a ``beginAt`` > 0 range): the job fails, saying
  which port is taken where.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from clusters.runtime.errors import HostPortBusy, RuntimeFailure
from jobs.execution.run_hooks import run_hooks
from jobs.models import Job
from jobs.transitions import job_event_add

# Starts of one container, the first included, while Docker's own picks are found taken.
PORT_CLASH_STARTS = 4

_CAUSE = re.compile(r"address already in use|port is already allocated", re.IGNORECASE)


def _cause(busy: HostPortBusy) -> str:
    found = _CAUSE.search(busy.message)
    return found.group(0).lower() if found else "taken"


def _user_fixed_ports(job: Job) -> set[int]:
    return {
        int(m["hostPort"])
        for m in (job.request.get("docker") or {}).get("portMappings") or ()
        if isinstance(m, dict) and m.get("hostPort") is not None
    } - run_hooks().portal_chosen_ports(job)


def start_despite_port_clashes(*, engine, job: Job, start: Callable[[], str]) -> str:
    """``start()`` (create and start the job's container, removing it when the start fails;
    returns its id), with a taken host port handled by who chose it (see the module)."""
    slave = job.slave.name if job.slave is not None else "?"
    replaced: list[int | None] = []  # None: a port Docker did not name
    for attempt in range(1, PORT_CLASH_STARTS + 1):
        try:
            container_id = start()
        except HostPortBusy as busy:
            port, cause = busy.host_port, _cause(busy)
            portal = run_hooks().portal_chosen_ports(job)
            if portal and (port is None or port in portal):
                chosen = [port] if port is not None else sorted(portal)
                raise RuntimeFailure(
                    run_hooks().port_clash_reason(chosen, slave, cause),
                    permanent=True,
                    status_code=busy.status_code,
                ) from None
            fixed = _user_fixed_ports(job)
            if port in fixed or (port is None and fixed):
                named = f"host port {port}" if port is not None else "a host port it fixes"
                field = "portList beginAt" if job.openpai_config else "portMappings hostPort"
                unfixed = "beginAt 0" if job.openpai_config else "hostPort out"
                raise RuntimeFailure(
                    f"{named} is taken on slave {slave} ({cause}): the job asks for this host "
                    f"port itself ({field}); free it on that machine, or use {unfixed} and a "
                    "free port is chosen for the job",
                    permanent=True,
                    status_code=busy.status_code,
                ) from None
            shown = port if port is not None else "?"
            if attempt == PORT_CLASH_STARTS:
                raise RuntimeFailure(
                    f"host ports picked by Docker were taken on slave {slave} at "
                    f"{PORT_CLASH_STARTS} starts in a row (the last: {shown}, {cause})",
                    permanent=True,
                    status_code=busy.status_code,
                ) from None
            replaced.append(port)
            job_event_add(
                job=job,
                message=f"host port {shown} that Docker picked is taken on slave {slave} "
                f"({cause}): starting the container again on other ports",
            )
            continue
        if replaced:
            published = ", ".join(
                str(p["hostPort"]) for p in engine.inspect(container_id).host_ports
            )
            job_event_add(
                job=job,
                message=f"started on host port(s) {published or 'none'}, in place of "
                + ", ".join(str(p) if p is not None else "?" for p in replaced)
                + " found taken",
            )
        return container_id
    raise AssertionError("unreachable")
