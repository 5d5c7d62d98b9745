"""Job documents and small helpers shared by the spec tests."""

from __future__ import annotations

import copy
import re

import pytest

from jobs.spec import SpecDefaults, SpecError

DEFAULTS = SpecDefaults()
DELETE = object()  # marks a key to remove in with_changes()
# Real OpenSSH public keys (made for these tests, their private keys thrown away):
# request.extra.sshPubKeys items must parse as keys.
ECDSA_KEY = (
    "ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlz"
    "dHAyNTYAAABBBMvTXAMPGXFznVEKA8bxAHqVIquOjiEZmpteKc5nXkXPybcMxgM88cWBLinCAP6/NW6MsLRuqZ9VBh9bAbF0+Qk="
)
ED25519_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAILk6Kdf4cPsSt3F42a45B3dtDjFQjsiyfQJjOKqpyTrI"


def minimal_job() -> dict:
    """The smallest valid v2 job."""
    return {
        "name": "minimal",
        "request": {
            "resources": {"cpus": 1, "gpus": 0, "cpuMemoryGb": 1},
            "docker": {"image": "debian:stable"},
        },
    }


def _split(path: str) -> list[str | int]:
    """'request.docker.storage[1].containerPath' -> ['request', 'docker', 'storage', 1, ...]"""
    parts: list[str | int] = []
    for piece in path.split("."):
        name, *indexes = re.split(r"\[(\d+)\]", piece)
        if name:
            parts.append(name)
        parts.extend(int(i) for i in indexes if i)
    return parts


def with_changes(doc: dict, changes: dict[str, object]) -> dict:
    """A deep copy of ``doc`` with values set (creating objects on the way) or DELETEd."""
    doc = copy.deepcopy(doc)
    for path, value in changes.items():
        *parents, last = _split(path)
        node = doc
        for part in parents:
            node = node.setdefault(part, {}) if isinstance(part, str) else node[part]
        if value is DELETE:
            del node[last]
        else:
            node[last] = copy.deepcopy(value)
    return doc


def deep_merge(base: dict, patch: dict) -> dict:
    """``base`` with ``patch`` merged in, objects recursively, everything else replaced."""
    result = copy.deepcopy(base)
    for key, value in patch.items():
        if isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = deep_merge(result[key], value)
        else:
            result[key] = copy.deepcopy(value)
    return result


def errors_of(call, *args, **kwargs) -> list[tuple[str, str]]:
    """Run ``call`` expecting SpecError; return its errors as (path, message) pairs."""
    with pytest.raises(SpecError) as info:
        call(*args, **kwargs)
    return [(e.path, e.message) for e in info.value.errors]
