"""What an app above jobs adds to the run of its jobs, registered from its ``AppConfig.ready``.

jobs runs every job's container the same way. An OpenPAI job (gangs/) needs a few answers only
its app knows, asked here at the moment the runtime needs them:

- ``container_extras``: the container's shm size and the folders mounted read-only (a task
  role's ``shmMB``, ``codeDir``), and environment the app adds that must stay out of the job's
  request, which pages and the API show (an interactive session's app token), when its spec is
  built;
- ``pull_credentials``: registry credentials read on the slave right before the pull (an
  ``authFile``); raising a permanent ``RuntimeFailure`` fails the job with its reason;
- ``kept_container``: until when an ended job's container is kept for inspection (``isDebug``),
  at its end and by the periodic reconcile that removes it later;
- ``portal_chosen_ports`` / ``port_clash_reason``: which host ports of a gang task the portal
  chose, and the reason a task fails with when one is found taken (the gang then goes back to
  the queue whole: jobs.execution.staging);
- ``starts_together`` / ``container_created``: a job whose container waits for its peers' (a
  gang's task): the launch creates it without starting it and says so; the app starts them all
  in one step once every one exists (``jobs.execution.runs.jobs_start_together``).

The defaults answer "nothing to add", which is every GPULab job. jobs never imports the app.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the hooks take jobs; this module stays a leaf that anything may import
    from jobs.models import Job


@dataclass(frozen=True)
class ContainerExtras:
    shm_size_bytes: int | None = None  # None: Docker's default
    read_only_paths: frozenset[str] = frozenset()  # container paths, no trailing slash
    # Variables set in the container beside the request's (which they override); never shown.
    env: Mapping[str, str] = field(default_factory=dict, repr=False)


@dataclass(frozen=True)
class PullCredentials:
    username: str
    password: str = field(repr=False)  # used for the pull only, never shown or stored
    source: str = ""  # said in the pull event: "registry credentials of authFile /project/a"


@dataclass(frozen=True)
class KeptContainer:
    until: datetime
    kept: str  # the event written when the job ends
    removed: str  # the event written when reconcile removes it after ``until``


def _no_extras(job: Job) -> ContainerExtras:
    return ContainerExtras()


def _no_credentials(job: Job) -> PullCredentials | None:
    return None


def _not_kept(job: Job) -> KeptContainer | None:
    return None


def _no_chosen_ports(job: Job) -> set[int]:
    return set()


def _starts_alone(job: Job) -> bool:
    return False


def _nothing_to_do(job: Job) -> None:
    return None


def _port_clash_reason(ports: list[int], slave: str, cause: str) -> str:
    named = ", ".join(str(p) for p in sorted(ports))
    return f"host port(s) {named} chosen by the portal are taken on slave {slave} ({cause})"


@dataclass(frozen=True)
class RunHooks:
    container_extras: Callable[[Job], ContainerExtras] = _no_extras
    pull_credentials: Callable[[Job], PullCredentials | None] = _no_credentials
    kept_container: Callable[[Job], KeptContainer | None] = _not_kept
    portal_chosen_ports: Callable[[Job], set[int]] = _no_chosen_ports
    # (ports, slave name, cause) -> the failed task's end reason.
    port_clash_reason: Callable[[list[int], str, str], str] = _port_clash_reason
    # True: the launch creates the job's container and leaves it unstarted, then calls
    # container_created; the app starts it with its peers (jobs_start_together).
    starts_together: Callable[[Job], bool] = _starts_alone
    container_created: Callable[[Job], object] = _nothing_to_do


_registered = [RunHooks()]


def run_hooks_register(**hooks: Callable) -> None:
    """Set the named hooks (an unknown name is a TypeError); the others keep their answer."""
    _registered[0] = replace(_registered[0], **hooks)


def run_hooks() -> RunHooks:
    return _registered[0]
