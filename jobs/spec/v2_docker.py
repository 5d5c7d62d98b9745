"""``request.docker``: image, command, environment, mounts and ports (docs/gpulab-format.md,
section 1).

Mount paths are only checked for shape here (absolute, no "." or ".." segments); which host
paths a job may mount is decided by the portal when the job is submitted and launched.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Collection

# The launcher's own splitter (pure: shlex only), so that what passes here always splits there.
from clusters.runtime.commands import split_command

from .checks import (
    DEFAULT_LIMITS,
    SITE_LIMIT,
    Errors,
    RequestLimits,
    check_int,
    check_str,
    describe,
    index,
    join,
    read_list,
    read_object,
    read_str,
)
from .images import (
    GPULAB_HINT,
    GPULAB_IMAGE_RE,
    MAX_IMAGE_LENGTH,
    gpulab_image,
    image_parse,
    registry_refusal,
)

DOCKER_FIELDS = (
    "image",
    "command",
    "environment",
    "storage",
    "portMappings",
    "projectGidVariableName",
    "workingDir",
    "groupAdd",
    "user",
)

ENV_NAME_RE = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
ENV_NAME_HINT = "must be a variable name: letters, digits and _, not starting with a digit"
WORD_RE = re.compile(r"\w+")
# GPULab's workingDir pattern, applied after the trailing "/" is added.
WORKING_DIR_RE = re.compile(r"/([^\n/]+/)*")

TMPFS = "tmpfs"
SSH_DIR = ".ssh/"
SSH_CONTAINER_DIR = "/root/.ssh/"
PROJECT_SHARE_AUTO = "PROJECT_SHARE_AUTO"
MAX_PATH_LENGTH = 4096
# Mounting over these would hide or replace the kernel's interfaces inside the container.
SYSTEM_DIRS = ("/proc/", "/sys/", "/dev/")
# Except a tmpfs or folder on /dev/shm: the usual way to give a job more shared memory than
# Docker's 64 MB (PyTorch's DataLoader workers need it), and nothing of the host's is exposed.
SHM_DIR = "/dev/shm/"
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")


def normalize_docker(
    value: object,
    path: str,
    errs: Errors,
    *,
    allowed_registries: Collection[str] = (),
    limits: RequestLimits = DEFAULT_LIMITS,
) -> dict | None:
    """Validate request.docker and return it with every key present.

    ``allowed_registries``: private registries the site allows (see images.registry_refusal);
    ``limits``: the site's bounds on the command and the port mappings.
    """
    f = read_object(value, path, errs, fields=DOCKER_FIELDS)
    if f is None:
        return None
    image = read_str(f, "image", errs, required=True, max_length=MAX_IMAGE_LENGTH)
    if image is not None:
        image = image_check(image, f.path_of("image"), errs, allowed_registries)
    working_dir = read_str(f, "workingDir", errs, min_length=1, max_length=MAX_PATH_LENGTH)
    if working_dir is not None:
        working_dir = _working_dir(working_dir, f.path_of("workingDir"), errs)
    return {
        "image": image,
        "command": _command(f.get("command"), f.path_of("command"), errs, limits),
        "environment": _environment(f.get("environment"), f.path_of("environment"), errs),
        "storage": _storage(f.get("storage"), f.path_of("storage"), errs),
        "portMappings": _port_mappings(f, errs, limits.ports_per_job),
        "projectGidVariableName": _gid_variable(f, errs),
        "workingDir": working_dir,
        "groupAdd": read_list(f, "groupAdd", errs, _word, bare_ok=True),
        "user": read_str(
            f, "user", errs, pattern=WORD_RE, pattern_message=r"must be a user name or id (\w+)"
        ),
    }


def image_check(text: str, path: str, errs: Errors, allowed: Collection[str]) -> str | None:
    """The image reference if GPULab would accept it (the site's ``allowed`` private
    registries), else None with the reason added at ``path``; OpenPAI's ``image`` too."""
    parsed = image_parse(text)
    if isinstance(parsed, str):
        errs.add(path, parsed)
        return None
    refusal = registry_refusal(parsed, allowed=allowed)
    if refusal:
        errs.add(path, refusal)
        return None
    if not GPULAB_IMAGE_RE.fullmatch(gpulab_image(text)):
        errs.add(path, GPULAB_HINT)
        return None
    return text


def _word(item: object, path: str, errs: Errors) -> str | None:
    return check_str(item, path, errs, pattern=WORD_RE, pattern_message=r"must be a group (\w+)")


def _command(value: object, path: str, errs: Errors, limits: RequestLimits) -> str | list[str]:
    """A string (split like `docker run` arguments at launch, no shell) or exec-form list, of at
    most ``limits.command_chars`` characters and ``limits.command_words`` words (a list's
    length is checked before its items: a 100,000-word list is one error, not 100,000)."""
    if value is None or value == "":
        return []  # the image's own CMD
    if isinstance(value, str):
        if len(value) > limits.command_chars:
            errs.add(path, _too_long(len(value), limits.command_chars))
            return []
        try:
            words = split_command(value) or []  # blanks only: no words, the image's CMD
        except ValueError as exc:  # unbalanced quote, trailing backslash
            errs.add(path, str(exc).removeprefix("command "))
            return value
        if len(words) > limits.command_words:
            errs.add(path, _too_many_words(len(words), limits.command_words))
        return value
    if not isinstance(value, list):
        errs.add(path, f"must be a string or a list of strings, not {describe(value)}")
        return []
    if len(value) > limits.command_words:
        errs.add(path, _too_many_words(len(value), limits.command_words))
        return []
    ok = True
    for position, item in enumerate(value):
        if not isinstance(item, str):
            errs.add(index(path, position), f"must be a string, not {describe(item)}")
            ok = False
    if ok and (chars := sum(len(item) for item in value)) > limits.command_chars:
        errs.add(path, _too_long(chars, limits.command_chars))
    return list(value)


def _too_long(chars: int, limit: int) -> str:
    return f"must be at most {limit} characters ({SITE_LIMIT}), not {chars}"


def _too_many_words(words: int, limit: int) -> str:
    return f"must have at most {limit} words ({SITE_LIMIT}), not {words}"


def _port_mappings(f, errs: Errors, limit: int) -> list[dict]:
    """At most ``limit`` port mappings, counted before any is read: every one is a
    docker-proxy process on the slave."""
    value = f.get("portMappings")
    if isinstance(value, list) and len(value) > limit:
        errs.add(
            f.path_of("portMappings"),
            f"must have at most {limit} port mappings ({SITE_LIMIT}), not {len(value)}",
        )
        return []
    mappings = read_list(f, "portMappings", errs, _port_mapping, bare_ok=False)
    _host_port_clashes(value, f.path_of("portMappings"), errs)
    return mappings


def _host_port_clashes(value: object, path: str, errs: Errors) -> None:
    """The same host port fixed twice (on one address, or on all addresses) can never start:
    refused at submit, naming the second mapping, instead of failing the job at its start."""
    if not isinstance(value, list):
        return
    taken: dict[int, list[tuple[int, str]]] = {}
    for position, item in enumerate(value):
        if not isinstance(item, dict):
            continue
        port = item.get("hostPort", item.get("host_port"))
        if not isinstance(port, int) or isinstance(port, bool) or port <= 0:
            continue
        address = str(item.get("hostIp") or item.get("host_ip") or "")
        for other, other_address in taken.get(port, []):
            everywhere = {"", "0.0.0.0", "::"}
            if address == other_address or address in everywhere or other_address in everywhere:
                errs.add(
                    join(index(path, position), "hostPort"),
                    f"host port {port} is already mapped by portMappings[{other}]",
                )
                break
        taken.setdefault(port, []).append((position, address))


# Variables the portal sets in every container: which GPUs a job sees (on declared-GPU slaves
# these variables are the only isolation; on NVIDIA slaves they must not widen the device
# request), the NVIDIA runtime's other controls (capabilities, MIG, requirements) and GPULab's
# GPULAB_* facts. A job cannot set or override them. Names are compared case-insensitively.
RESERVED_ENV_NAMES = ("NVIDIA_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES")
RESERVED_ENV_PREFIXES = ("NVIDIA_", "GPULAB_")


def reserved_env_reason(name: str) -> str | None:
    """Why a job may not set variable ``name``, or None when it may."""
    upper = name.upper()
    if upper in RESERVED_ENV_NAMES:
        return "set by the portal; a job cannot choose its GPUs"
    for prefix in RESERVED_ENV_PREFIXES:
        if upper.startswith(prefix):
            return f"{prefix}* variables are set by the portal; a job cannot set them"
    return None


def _environment(value: object, path: str, errs: Errors) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        errs.add(path, f"must be an object of NAME: value pairs, not {describe(value)}")
        return {}
    result = {}
    for name, item in value.items():
        item_path = join(path, name)
        if not isinstance(name, str) or not ENV_NAME_RE.fullmatch(name):
            errs.add(item_path, ENV_NAME_HINT)
        elif reason := reserved_env_reason(name):
            errs.add(item_path, reason)
        elif item is None or isinstance(item, float | list | dict):
            # GPULab's schema: str | int | bool. A float would be rendered differently by
            # different tools ("1.0" vs "1"), so it has to be written as a string.
            errs.add(item_path, f"must be a string, integer or boolean, not {describe(item)}")
        else:
            result[name] = item
    return result


def _gid_variable(f, errs: Errors) -> str | None:
    name = read_str(
        f, "projectGidVariableName", errs, pattern=ENV_NAME_RE, pattern_message=ENV_NAME_HINT
    )
    if name is not None and (reason := reserved_env_reason(name)):
        errs.add(f.path_of("projectGidVariableName"), reason)
        return None
    return name


def _path_shape(text: str, path: str, errs: Errors, *, what: str) -> str | None:
    """Shared rules for container and host paths; returns the path ending with "/"."""
    if not text.startswith("/"):
        errs.add(path, f"must be an absolute path{what}")
        return None
    if _CONTROL_RE.search(text):
        errs.add(path, "must not contain control characters")
        return None
    if any(part in (".", "..") for part in text.split("/")):
        errs.add(path, 'must not contain "." or ".." segments')
        return None
    return text if text.endswith("/") else text + "/"


def _container_path(value: object, path: str, errs: Errors) -> str | None:
    text = check_str(value, path, errs, min_length=1, max_length=MAX_PATH_LENGTH)
    if text is None:
        return None
    normalized = _path_shape(text, path, errs, what="")
    if normalized == "/":
        errs.add(path, "cannot be the container's root directory /")
        return None
    if normalized is not None and normalized != SHM_DIR:
        for system_dir in SYSTEM_DIRS:
            if normalized.startswith(system_dir):
                errs.add(path, f"cannot be {system_dir[:-1]} or inside it (the kernel's files)")
                return None
    return normalized


def _host_path(value: object, path: str, errs: Errors) -> str | None:
    text = check_str(value, path, errs, min_length=1, max_length=MAX_PATH_LENGTH)
    if text is None:
        return None
    # Magic names: the user's SSH folder and this project's share. ".ssh/" and
    # "PROJECT_SHARE_AUTO/" are what GPULab itself stores after its own normalisation.
    if text in (".ssh", SSH_DIR):
        return SSH_DIR
    if text in (PROJECT_SHARE_AUTO, PROJECT_SHARE_AUTO + "/"):
        return PROJECT_SHARE_AUTO
    return _path_shape(text, path, errs, what=' (or ".ssh", "PROJECT_SHARE_AUTO" or "tmpfs")')


def _storage(value: object, path: str, errs: Errors) -> list[dict]:
    if value is None:
        return []
    if not isinstance(value, list):
        errs.add(path, f"must be a list, not {describe(value)}")
        return []
    result: list[dict] = []
    used: dict[str, int] = {}  # containerPath -> first item using it
    for position, item in enumerate(value):
        item_path = index(path, position)
        mount = _storage_item(item, item_path, errs)
        if mount is None:
            continue
        target = mount["containerPath"]
        if target in used:
            # Docker refuses two mounts on one directory; say so now, not at launch.
            errs.add(
                join(item_path, "containerPath"), f"is already used by {index(path, used[target])}"
            )
        else:
            used[target] = position
        result.append(mount)
    return result


def _storage_item(item: object, path: str, errs: Errors) -> dict | None:
    if isinstance(item, str):
        if not item:
            errs.add(path, "must not be empty")
            return None
        item = {"hostPath": item}  # GPULab shorthand: a bare string is a hostPath
    f = read_object(item, path, errs, fields=("containerPath", "hostPath", "sizeGb"))
    if f is None:
        return None
    if f.get("hostPath") == TMPFS:
        container = f.get("containerPath")
        if container is None:
            errs.add(f.path_of("containerPath"), 'is required with hostPath "tmpfs"')
        else:
            container = _container_path(container, f.path_of("containerPath"), errs)
        size = f.get("sizeGb")
        if size is None:
            errs.add(f.path_of("sizeGb"), 'is required with hostPath "tmpfs"')
        else:
            size = check_int(size, f.path_of("sizeGb"), errs, above=0)
        if container is None or size is None:
            return None
        return {"hostPath": TMPFS, "containerPath": container, "sizeGb": size}

    ok = True
    if f.has("sizeGb"):
        errs.add(f.path_of("sizeGb"), 'is only allowed with hostPath "tmpfs"')
        ok = False
    if not f.has("containerPath") and not f.has("hostPath"):
        errs.add(path, "needs containerPath or hostPath")
        return None
    container = host = None
    if f.has("containerPath"):
        container = _container_path(f.get("containerPath"), f.path_of("containerPath"), errs)
        ok = ok and container is not None
    if f.has("hostPath"):
        host = _host_path(f.get("hostPath"), f.path_of("hostPath"), errs)
        ok = ok and host is not None
    if not ok:
        return None
    # The missing side copies the other, except for the magic names.
    if host is None:
        host = SSH_DIR if container == SSH_CONTAINER_DIR else container
    if container is None:
        if host == SSH_DIR:
            container = SSH_CONTAINER_DIR
        elif host == PROJECT_SHARE_AUTO:
            errs.add(f.path_of("containerPath"), "is required with hostPath PROJECT_SHARE_AUTO")
            return None
        else:
            container = host
    return {"containerPath": container, "hostPath": host}


def _working_dir(text: str, path: str, errs: Errors) -> str | None:
    normalized = text if text.endswith("/") else text + "/"
    if not WORKING_DIR_RE.fullmatch(normalized):
        errs.add(path, "must be an absolute path like /work/ (no empty segments)")
        return None
    if any(part in (".", "..") for part in normalized.split("/")):
        errs.add(path, 'must not contain "." or ".." segments')
        return None
    return normalized


def _port_mapping(item: object, path: str, errs: Errors) -> dict | None:
    if isinstance(item, int) and not isinstance(item, bool):
        item = {"containerPort": item}  # GPULab shorthand: a bare port number
    elif not isinstance(item, dict):
        errs.add(
            path,
            f'must be an object like {{"containerPort": 80}} or a port number, not {describe(item)}',
        )
        return None
    f = read_object(item, path, errs, fields=("containerPort", "hostPort", "hostIp"))
    if f is None:
        return None
    container_port = f.get("containerPort")
    if container_port is None:
        errs.add(f.path_of("containerPort"), "is required")
    else:
        container_port = check_int(
            container_port, f.path_of("containerPort"), errs, minimum=1, maximum=65535
        )
    host_port = f.get("hostPort")
    if host_port is not None:
        host_port = check_int(host_port, f.path_of("hostPort"), errs, minimum=1, maximum=65535)
    host_ip = f.get("hostIp")
    if host_ip is not None:
        host_ip = check_str(host_ip, f.path_of("hostIp"), errs, min_length=1, max_length=64)
        if host_ip is not None:
            try:
                host_ip = str(ipaddress.ip_address(host_ip))
            except ValueError:
                errs.add(f.path_of("hostIp"), "must be an IP address")
                host_ip = None
    if container_port is None:
        return None
    return {"containerPort": container_port, "hostPort": host_port, "hostIp": host_ip}
