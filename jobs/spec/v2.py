"""Validation and normalisation of GPULab v2 job documents (docs/gpulab-format.md, section 1).

``normalize_job`` checks every field, collects every problem, and returns one canonical
document: camelCase keys only, every key present (absent optional values as null, [] or {}),
defaults filled in, paths ending with "/", times in UTC. Normalising a normalised document
returns an equal document, so the stored request can always be validated again.

Server-set keys (uuid, owner, state, restartInfo, deploymentEnvironment) are accepted on input
and dropped: the real gpulab-cli sends owner and deploymentEnvironment with every submission,
and a job fetched from a server carries the rest. Any other unknown key, at any depth, is an
error naming its path.

Choices where GPULab is silent: ``name`` is at most 255 characters (it is shown in lists and
stored in an indexed column); booleans are strict (true/false only); numbers must be JSON
numbers (2 and 2.0 are 2; "2" is refused, which GPULab's own client never sends) and integers
are capped at 2^31-1; ``extra.sshPubKeys`` items must parse as OpenSSH public keys (any type the
``cryptography`` package reads, certificates included); counts and sizes are bounded by the
site (``RequestLimits`` in checks.py: ports, command, e-mail recipients); ``request.resources``
(what a job needs from a slave) is checked here too; see v2_docker, v2_notifications and
v2_scheduling for the other sections.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import partial

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives.serialization import (
    load_ssh_public_identity,
    load_ssh_public_key,
)

from core.errors import DOCUMENT_PATH
from core.jsontext import check_storable
from core.timefmt import parse_utc_z

from .checks import (
    DEFAULT_LIMITS,
    SITE_LIMIT,
    Errors,
    RequestLimits,
    SpecError,
    check_str,
    describe,
    index,
    join,
    read_int,
    read_list,
    read_object,
    read_str,
)
from .v2_docker import normalize_docker
from .v2_notifications import normalize_notifications
from .v2_scheduling import normalize_scheduling, parse_duration

JOB_FIELDS = ("name", "description", "request")
SERVER_SET_FIELDS = ("uuid", "owner", "state", "restartInfo", "deploymentEnvironment")
REQUEST_FIELDS = ("resources", "docker", "scheduling", "extra", "notifications")
EXTRA_FIELDS = (
    "sshPubKeys",
    "emailOnQueue",
    "emailOnRun",
    "emailOnEnd",
    "emailOnHalt",
    "emailOnRestart",
)
NAME_MAX_LENGTH = 255
# Loose on purpose: the portal only needs something it can hand to its mailer.
EMAIL_RE = re.compile(r"[^@\s]+@[^@\s]+")


@dataclass(frozen=True)
class SpecDefaults:
    """Site defaults applied when a job does not set them (GPULab's: 1 week / 2 weeks)."""

    min_duration: str = "1 week"
    max_duration: str = "2 weeks"
    # Registries on localhost or private addresses that images may name ("host[:port]").
    allowed_private_registries: tuple[str, ...] = ()
    # Hosts webhook subscriptions may call (v2_notifications; PORTAL_WEBHOOK_ALLOWED_HOSTS).
    webhook_allowed_hosts: tuple[str, ...] = ()
    # The site's bounds on counts and sizes (checks.RequestLimits; the PORTAL_MAX_* settings).
    limits: RequestLimits = DEFAULT_LIMITS

    def __post_init__(self) -> None:
        # Fail at start-up on a bad setting, not on the first submitted job.
        parse_duration(self.min_duration)
        if parse_duration(self.max_duration) < 60:
            raise ValueError("the default maxDuration must be at least 1 minute")


def normalize_job(doc: dict, *, defaults: SpecDefaults, storable_checked: bool = False) -> dict:
    """Validate a v2 job document and return its canonical form; raise SpecError listing every
    problem (paths like ``request.resources.gpus``). ``storable_checked``: the caller has run
    ``check_storable`` on this very document (parse_job_document: once per document of an
    array is enough)."""
    if not isinstance(doc, dict):
        raise SpecError.single(DOCUMENT_PATH, f"must be a JSON object, not {describe(doc)}")
    if not storable_checked:
        check_storable(doc)
    errs = Errors()
    # Top-level fields are named plainly: "name", "request.docker.image".
    top = read_object(doc, "", errs, fields=JOB_FIELDS, ignored=SERVER_SET_FIELDS)
    assert top is not None

    name = read_str(top, "name", errs, required=True, min_length=1, max_length=NAME_MAX_LENGTH)
    description = read_str(top, "description", errs)
    request = None
    if not top.has("request"):
        errs.add("request", "is required")
    else:
        request = _request(top.get("request"), top.path_of("request"), errs, defaults)
    errs.raise_if_any()
    return {"name": name, "description": description, "request": request}


def _request(value: object, path: str, errs: Errors, defaults: SpecDefaults) -> dict | None:
    f = read_object(value, path, errs, fields=REQUEST_FIELDS)
    if f is None:
        return None
    sections = {}
    docker = partial(
        normalize_docker,
        allowed_registries=defaults.allowed_private_registries,
        limits=defaults.limits,
    )
    for name, normalize in (("resources", normalize_resources), ("docker", docker)):
        if f.has(name):
            sections[name] = normalize(f.get(name), f.path_of(name), errs)
        else:
            errs.add(f.path_of(name), "is required")
    sections["scheduling"] = normalize_scheduling(
        f.get("scheduling"),
        f.path_of("scheduling"),
        errs,
        min_default=defaults.min_duration,
        max_default=defaults.max_duration,
    )
    limit = defaults.limits.email_recipients
    sections["extra"] = _extra(f.get("extra"), f.path_of("extra"), errs, limit)
    notifications = f.get("notifications")
    if notifications is not None:  # a portal extension: absent from requests that lack it
        sections["notifications"] = normalize_notifications(
            notifications,
            f.path_of("notifications"),
            errs,
            allowed_hosts=defaults.webhook_allowed_hosts,
        )
    _check_recipients(sections, f, errs, limit)
    return sections


# --- request.resources: what a job needs from a slave (docs/gpulab-format.md, section 1) -----

RESOURCE_FIELDS = (
    "cpus",
    "gpus",
    "cpuMemoryGb",
    "gpuMemoryGb",
    "gpuModel",
    "features",
    "minCudaVersion",
    "clusterId",
    "slaveName",
    "slaveInstanceId",
)

# Long enough for any GPU model or feature name; keeps stored filters bounded.
MAX_FILTER_LENGTH = 200


def _filter_item(item: object, path: str, errs: Errors) -> str | None:
    # gpuModel and features items are substrings to match: one letter would match nearly anything.
    return check_str(item, path, errs, min_length=2, max_length=MAX_FILTER_LENGTH)


def normalize_resources(value: object, path: str, errs: Errors) -> dict | None:
    """Validate request.resources and return it with every key present (absent ones null/[])."""
    f = read_object(value, path, errs, fields=RESOURCE_FIELDS)
    if f is None:
        return None
    return {
        "cpus": read_int(f, "cpus", errs, required=True, above=0),
        "gpus": read_int(f, "gpus", errs, required=True, minimum=0),
        # GB here are GiB (1024^3 bytes), as in GPULab.
        "cpuMemoryGb": read_int(f, "cpuMemoryGb", errs, required=True, above=0),
        "gpuMemoryGb": read_int(f, "gpuMemoryGb", errs, above=1),
        "gpuModel": read_list(f, "gpuModel", errs, _filter_item, bare_ok=True),
        "features": read_list(f, "features", errs, _filter_item, bare_ok=True),
        "minCudaVersion": read_int(f, "minCudaVersion", errs, minimum=0),
        "clusterId": read_int(f, "clusterId", errs, minimum=0),
        "slaveName": read_str(f, "slaveName", errs, min_length=1, max_length=255),
        "slaveInstanceId": read_str(f, "slaveInstanceId", errs, min_length=1, max_length=255),
    }


# --- extra ------------------------------------------------------------------------------------

SSH_KEY_HINT = (
    "must be an OpenSSH public key: type, base64 key and an optional comment, "
    "as in ~/.ssh/id_ed25519.pub"
)


def _ssh_key(item: object, path: str, errs: Errors) -> str | None:
    # Any key type the cryptography package reads is accepted (the real client adds ed25519,
    # ecdsa and rsa keys; certificates too); the SSH front end decides what it can use.
    # Stripped before the checks so that a normalised document validates again.
    if isinstance(item, str):
        item = item.strip()
    text = check_str(item, path, errs, min_length=1, max_length=16384)
    if text is None:
        return None
    data = text.encode("utf-8", "surrogatepass")
    for load in (load_ssh_public_key, load_ssh_public_identity):
        try:
            load(data)
            return text
        except (ValueError, UnsupportedAlgorithm):
            continue
    errs.add(path, SSH_KEY_HINT)
    return None


def _ssh_keys(f, errs: Errors) -> list:
    """``extra.sshPubKeys``, with lists inside it flattened one level: the real gpulab-cli
    (3.11) appends its ``--ssh-pub-key`` values to the keys it found as one nested list
    (``extra_ssh_pubkeys.append(ssh_pub_key)``), so ``["ssh-ed25519 A…", ["ssh-rsa B…"]]`` is
    what it sends. Deeper nesting is refused at the inner item's path."""
    value = f.get("sshPubKeys")
    if not isinstance(value, list):
        return read_list(f, "sshPubKeys", errs, _ssh_key, bare_ok=False)
    path = f.path_of("sshPubKeys")
    keys = []
    for position, item in enumerate(value):
        item_path = index(path, position)
        inner = enumerate(item) if isinstance(item, list) else [(None, item)]
        for inner_position, key in inner:
            key_path = item_path if inner_position is None else index(item_path, inner_position)
            checked = _ssh_key(key, key_path, errs)
            if checked is not None:
                keys.append(checked)
    return keys


def _email(item: object, path: str, errs: Errors) -> str | None:
    return check_str(
        item,
        path,
        errs,
        max_length=254,
        pattern=EMAIL_RE,
        pattern_message="must be an e-mail address",
    )


def _extra(value: object, path: str, errs: Errors, email_limit: int) -> dict | None:
    f = read_object({} if value is None else value, path, errs, fields=EXTRA_FIELDS)
    if f is None:
        return None
    result = {"sshPubKeys": _ssh_keys(f, errs)}
    for name in EXTRA_FIELDS[1:]:
        listed = f.get(name)
        if isinstance(listed, list) and len(listed) > email_limit:
            # Counted before the addresses are read: 5,000 of them are one error.
            errs.add(f.path_of(name), _too_many_recipients(len(listed), email_limit))
            result[name] = []
            continue
        result[name] = read_list(f, name, errs, _email, bare_ok=False)
    return result


def _too_many_recipients(count: int, limit: int) -> str:
    return f"must name at most {limit} e-mail recipients per job ({SITE_LIMIT}), not {count}"


def _check_recipients(sections: dict, f, errs: Errors, limit: int) -> None:
    """At most ``limit`` distinct addresses over every emailOn* list and EMAIL subscription
    target together; the error names the list that went past it."""
    seen: set[str] = set()
    extra = sections.get("extra") or {}
    for name in EXTRA_FIELDS[1:]:
        seen.update(address.lower() for address in extra.get(name) or ())
        if len(seen) > limit:
            errs.add(join(f.path_of("extra"), name), _too_many_recipients(len(seen), limit))
            return
    subscriptions = (sections.get("notifications") or {}).get("subscriptions") or ()
    for subscription in subscriptions:
        for target in subscription.get("deliveryTargets") or ():
            if target.get("deliveryMethod") == "EMAIL":
                seen.add(str(target.get("deliveryAddress")).lower())
        if len(seen) > limit:
            errs.add(
                join(f.path_of("notifications"), "subscriptions"),
                _too_many_recipients(len(seen), limit),
            )
            return


def tmpfs_gb(request: dict) -> int:
    """GB of tmpfs mounts in a normalised request: memory reserved on top of cpuMemoryGb."""
    return sum(
        item["sizeGb"] for item in request["docker"]["storage"] if item.get("hostPath") == "tmpfs"
    )


def duration_seconds(request: dict, key: str) -> int:
    """Seconds of ``minDuration`` or ``maxDuration`` of a normalised request."""
    if key not in ("minDuration", "maxDuration"):
        raise KeyError(key)
    return parse_duration(request["scheduling"][key])


def columns_from_request(request: dict) -> dict:
    """The indexed ``Job`` columns a canonical v2 request stands for (written beside it at
    submit; the scheduler reads them, not the request)."""
    resources = request["resources"]
    scheduling = request["scheduling"]
    bucket = scheduling.get("maxSimultaneousJobs") or {}
    return {
        "gpus": resources["gpus"],
        "cpus": resources["cpus"],
        "cpu_memory_gb": resources["cpuMemoryGb"],
        "tmpfs_gb": tmpfs_gb(request),
        "gpu_memory_gb": resources.get("gpuMemoryGb"),
        "gpu_models": list(resources.get("gpuModel") or []),
        "features": list(resources.get("features") or []),
        "min_cuda_version": resources.get("minCudaVersion"),
        "requested_cluster_id": resources.get("clusterId"),
        "requested_slave_name": resources.get("slaveName") or "",
        "interactive": scheduling["interactive"],
        "restartable": scheduling["restartable"],
        "allow_halt_without_signal": scheduling["allowHaltWithoutSignal"],
        "min_duration_s": duration_seconds(request, "minDuration"),
        "max_duration_s": duration_seconds(request, "maxDuration"),
        "not_before": parse_utc_z(scheduling.get("notBefore")),
        "not_after": parse_utc_z(scheduling.get("notAfter")),
        "bucket_name": bucket.get("bucketName") or "",
        "bucket_max": bucket.get("bucketMax"),
        "reservation_ids": list(scheduling.get("reservationIds") or []),
    }
