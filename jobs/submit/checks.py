"""Submit-time checks of a request against the site and the registered slaves.

A job whose storage no slave offers, whose fixed host ports the site does not allow, or whose
resources no registered slave could ever provide, is refused at submit with the reason instead
of waiting in the queue forever (or failing at launch).

The slaves' capabilities are read once per change, not once per submit: each process keeps the
last view it built under the capability stamp it read first (clusters/capabilities.py), and
rebuilds it when the stamp differs. Reading the stamp before the slaves makes a stale view
impossible: a change commits its rows and a new stamp together, so a view built under a stamp
holds data at least as new as that stamp.
"""

import json
import threading
from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings

from clusters.capabilities import capability_stamp
from clusters.models import Slave
from clusters.services import site_port_policy
from core.timefmt import utc_z
from jobs.execution.storage import (
    StorageRefused,
    default_roots,
    resolve_mounts,
    storage_aliases,
    with_aliases,
)
from jobs.scheduler_bridge.snapshot import slave_state
from jobs.spec import FieldError, SpecError
from jobs.submit.feasibility import impossible_reason_for_request, quota_refusal_for_request


def slave_roots(slave) -> dict[str, str]:
    """The storage roots a slave offers (its own, else the site's default ones), with the
    site's aliases of them (PORTAL_STORAGE_ALIASES)."""
    roots = slave.storage_roots or default_roots(str(settings.PORTAL_STORAGE_BASE))
    return with_aliases(roots, storage_aliases(settings.PORTAL_STORAGE_ALIASES))


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
