"""Submit-time checks of a request against the site and the registered slaves.

A job whose storage no slave offers, whose fixed host ports the site does not allow, or whose
resources no registered slave could ever provide, is refused at submit with the reason instead
of waiting in the queue forever (or failing at launch).

The slaves' capabilities are read once per change, not once per submit: each process keeps the
last view it built under the capability stamp it read first (clusters/capabilities.py), and
rebuilds it when the stamp differs. Reading the stamp before the slaves makes a stale view
impossible: a change commits its rows and a new stamp together, so a view built under a stamp
holds data at least as new as that stamp.

Feasibility (``impossible_reason_for_request``, at the end of this module): could any registered
slave ever run this request? The same rules the scheduler explains a queued job with
(``jobs.scheduler.explain``), applied to the request as if it were queued now, on the
registered slaves as the bridge sees them; and the hard quotas (``quota_refusal_for_request``).
"""

import json
import threading
from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings
from django.utils import timezone

from clusters.capabilities import capability_stamp
from clusters.models import Slave
from clusters.services import site_port_policy
from core.timefmt import utc_z
from jobs.execution.storage import (
    StorageRefused,
    default_roots,
    resolve_mounts,
    slave_roots,
    storage_aliases,
    with_aliases,
)
from jobs.scheduler.explain import gang_impossible_reasons, impossible_reason
from jobs.scheduler.quota_ledger import quota_impossible
from jobs.scheduler_bridge.quota_usage import quota_limit
from jobs.scheduler_bridge.snapshot import (
    PORT_MAPPINGS,
    QUEUED_FIELDS,
    queued_job,
    scheduler_config,
    slave_state,
)
from jobs.spec import FieldError, SpecError
from jobs.spec.v2 import columns_from_request
from quotas.selectors import month_end, quotas_in_force


@dataclass(frozen=True)
class SlaveView:
    """What the storage check reads of a slave (the Slave row itself is not kept)."""

    name: str
    storage_roots: dict


@dataclass(frozen=True)
class Capabilities:
    slaves: tuple[SlaveView, ...]
    states: tuple  # jobs.scheduler.model.SlaveState, one per slave


_cache_lock = threading.Lock()
_cache: tuple[str, Capabilities] | None = None


def _build_capabilities() -> Capabilities:
    slaves = list(
        Slave.objects.select_related("cluster").prefetch_related("gpus", "cluster__owner_projects")
    )
    return Capabilities(
        slaves=tuple(SlaveView(s.name, s.storage_roots) for s in slaves),
        states=tuple(slave_state(s) for s in slaves),
    )


def slave_capabilities() -> Capabilities:
    """The registered slaves as the submit check sees them, cached under the capability stamp."""
    global _cache
    stamp = capability_stamp()  # first: see the module docstring
    cached = _cache
    if stamp is not None and cached is not None and cached[0] == stamp:
        return cached[1]
    built = _build_capabilities()
    if stamp is not None:
        with _cache_lock:
            _cache = (stamp, built)
    return built


def check_storage(*, request: dict, slaves, project: str, user: str) -> None:
    storage = request["docker"]["storage"]
    if not storage:
        return
    pinned = request["resources"].get("slaveName")
    candidates = [s for s in slaves if not pinned or s.name == pinned]
    roots_options = [slave_roots(s) for s in candidates] or [
        with_aliases(
            default_roots(str(settings.PORTAL_STORAGE_BASE)),
            storage_aliases(settings.PORTAL_STORAGE_ALIASES),
        )
    ]
    first_error: StorageRefused | None = None
    for roots in roots_options:
        try:
            resolve_mounts(storage=storage, roots=roots, project=project, user=user)
            return
        except StorageRefused as refused:
            first_error = first_error or refused
    assert first_error is not None  # roots_options is never empty
    raise SpecError([FieldError(first_error.path, first_error.message)])


def check_time_window(*, request: dict, now: datetime) -> None:
    """A notAfter already past can never be met: refuse it instead of failing it at release.
    An interactive job starts at once or fails, so a notBefore still to come contradicts it;
    one already past (GPULab's own all-options example) does not (jobs/spec/v2_scheduling.py)."""
    scheduling = request["scheduling"]
    errors = []
    not_after = scheduling.get("notAfter")
    if not_after and datetime.fromisoformat(not_after) <= now:
        errors.append(
            FieldError(
                "request.scheduling.notAfter",
                f"is in the past ({not_after}; now {utc_z(now, timespec='seconds')})",
            )
        )
    not_before = scheduling.get("notBefore")
    if scheduling.get("interactive") and not_before and datetime.fromisoformat(not_before) > now:
        errors.append(
            FieldError(
                "request.scheduling.notBefore",
                f"is in the future ({not_before}; now {utc_z(now, timespec='seconds')}): an "
                "interactive job starts at once or fails, it cannot wait for notBefore",
            )
        )
    if errors:
        raise SpecError(errors)


def port_errors(request: dict) -> list[FieldError]:
    """Fixed host ports outside the site's range or reserved, host addresses other than the
    allowed ones (the engine refuses them again before creating a container)."""
    mappings = request["docker"].get("portMappings") or ()
    if not mappings:
        return []  # most jobs publish nothing: no policy to parse (2% of a submission)
    policy = site_port_policy()
    errors = []
    for position, mapping in enumerate(mappings):
        path = f"request.docker.portMappings[{position}]"
        if mapping.get("hostPort") is not None:
            if why := policy.host_port_refusal(int(mapping["hostPort"])):
                errors.append(FieldError(f"{path}.hostPort", why))
        if mapping.get("hostIp") is not None:
            if why := policy.host_ip_refusal(mapping["hostIp"]):
                errors.append(FieldError(f"{path}.hostIp", why))
    return errors


@dataclass
class RegisteredSlaves:
    """What one submission checks its jobs against: the cached capabilities, and each check's
    verdict (None, or the SpecError) by the parts of a request it reads, so that the jobs of
    an array (a parameter sweep mostly asks for the same resources) are checked once."""

    capabilities: Capabilities
    verdicts: dict = field(default_factory=dict)


def registered_slaves() -> RegisteredSlaves:
    return RegisteredSlaves(capabilities=slave_capabilities())


def check_request_against_slaves(
    *, project, request: dict, user: str = "", registered: RegisteredSlaves | None = None
) -> None:
    registered = registered or registered_slaves()
    key = json.dumps(
        [
            request["resources"],
            request["scheduling"],
            request["docker"]["storage"],
            request["docker"].get("portMappings"),
        ],
        sort_keys=True,
        default=str,
    )
    if key not in registered.verdicts:
        registered.verdicts[key] = _verdict(
            project=project, request=request, user=user, capabilities=registered.capabilities
        )
    if registered.verdicts[key] is not None:
        raise registered.verdicts[key]


def _verdict(*, project, request: dict, user: str, capabilities: Capabilities):
    errors = port_errors(request)
    try:
        check_storage(
            request=request, slaves=capabilities.slaves, project=project.name, user=user or "user"
        )
    except SpecError as refused:
        errors.extend(refused.errors)
    if errors:
        return SpecError(errors)
    reason = impossible_reason_for_request(
        request=request, project=project, states=capabilities.states
    )
    if reason:
        return SpecError(
            [FieldError("request.resources", f"no registered slave can run this job: {reason}")]
        )
    if refusal := quota_refusal_for_request(request=request, project=project, user=user):
        return SpecError([FieldError("request.resources", f"over a quota: {refusal}")])
    return None


# --- feasibility ------------------------------------------------------------------------------


def impossible_reason_for_request(
    *, request: dict, project, slaves: list[Slave] | None = None, states=None
) -> str | None:
    """Why no registered slave could ever run this request (None when some could).

    Pass the slaves, or their ``slave_state``s (the submit check keeps those cached).
    """
    if states is None:
        states = [slave_state(s) for s in slaves or ()]
    if not states:
        return None  # an empty portal accepts jobs: slaves may be registered later
    job = _checked_job(request, project)
    return impossible_reason(job, list(states), config=scheduler_config())


def quota_refusal_for_request(*, request: dict, project, user: str) -> str | None:
    """Why a hard limit of the project, the user or the user within the project could never
    let this request run (more GPUs than it may hold at once, more hours than a month's
    budget), or None. Usage does not matter here: the budget renews every month."""
    limits = quotas_in_force(projects=[project.name], users=[user] if user else [])
    if not limits:
        return None
    renews = month_end(timezone.now())
    job = _checked_job(request, project, owner__username=user)
    return quota_impossible(job, [quota_limit(q, None, renews) for q in limits])


def _checked_job(request: dict, project, **extra):
    """The scheduler's view of a job of ``request`` that is being submitted."""
    columns = columns_from_request(request)
    row = {
        "uuid": "submit-check",
        "owner__username": "",
        "project__name": project.name,
        "created": timezone.now(),
        "queued_explanations": [],
        **extra,
        **{k: columns[k] for k in columns if k in QUEUED_FIELDS},
    }
    return queued_job(row)


def gang_impossible_reasons_for_requests(
    *, roles: list[tuple[dict, int]], project, states
) -> list[tuple[int | None, str]]:
    """Why the registered slaves could never hold every task of a gang at once
    (``jobs.scheduler.explain.gang_impossible_reasons``). ``roles``: one canonical v2 request
    of each role and its number of tasks; ``states``: the slaves' ``slave_state``s."""
    jobs = []
    for request, count in roles:
        ports = {PORT_MAPPINGS: request["docker"].get("portMappings")}
        jobs.append((_checked_job(request, project, **ports), count))
    return gang_impossible_reasons(jobs, list(states), config=scheduler_config())
