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
stored in an indexed column); booleans are strict (true/false only); integers follow GPULab's
lax rule (2, 2.0 and "2" are 2) but are capped at 2^31-1; see also v2_docker and v2_scheduling.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import partial

from .checks import Errors, check_str, describe, read_list, read_object, read_str
from .durations import parse_duration
from .errors import SpecError
from .jsontext import DOCUMENT_PATH, check_storable
from .v2_docker import normalize_docker
from .v2_notifications import normalize_notifications
from .v2_resources import normalize_resources
from .v2_scheduling import normalize_scheduling

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
    docker = partial(normalize_docker, allowed_registries=defaults.allowed_private_registries)
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
    sections["extra"] = _extra(f.get("extra"), f.path_of("extra"), errs)
    notifications = f.get("notifications")
    if notifications is not None:  # a portal extension: absent from requests that lack it
        sections["notifications"] = normalize_notifications(
            notifications,
            f.path_of("notifications"),
            errs,
            allowed_hosts=defaults.webhook_allowed_hosts,
        )
    return sections


def _ssh_key(item: object, path: str, errs: Errors) -> str | None:
    # Any key type is accepted (the real client adds ed25519, ecdsa and rsa keys); the SSH
    # front end decides what it can use, a job is never refused for its key.
    # Stripped before the checks so that a normalised document validates again.
    if isinstance(item, str):
        item = item.strip()
    return check_str(item, path, errs, min_length=1, max_length=16384)


def _email(item: object, path: str, errs: Errors) -> str | None:
    return check_str(
        item,
        path,
        errs,
        max_length=254,
        pattern=EMAIL_RE,
        pattern_message="must be an e-mail address",
    )


def _extra(value: object, path: str, errs: Errors) -> dict | None:
    f = read_object({} if value is None else value, path, errs, fields=EXTRA_FIELDS)
    if f is None:
        return None
    result = {"sshPubKeys": read_list(f, "sshPubKeys", errs, _ssh_key, bare_ok=False)}
    for name in EXTRA_FIELDS[1:]:
        result[name] = read_list(f, name, errs, _email, bare_ok=False)
    return result


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
