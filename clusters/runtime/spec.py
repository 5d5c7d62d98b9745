"""What a job container may get, as one frozen value, and the checks every engine applies to it.

Which host paths a project may mount is decided elsewhere (the slave's storage roots); the
checks here are defence in depth: whatever the caller passes, a container never gets the
Docker socket, never runs privileged, never joins the host's network or PID namespace and
never gains capabilities; it never asks the NVIDIA runtime for more GPUs than its device
request, and it never publishes a fixed host port the site refuses (privileged ports, the
engine's and the portal's own), or on another address than the allowed ones (``PortPolicy``).
``engine`` applies ``check_spec`` before every create.
"""

from __future__ import annotations

import ipaddress
import posixpath
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import NamedTuple

from clusters.runtime.errors import RuntimeFailure

# Docker (and containerd) control sockets and the directories holding them. A bind of any of
# these, of anything inside them, or of a parent directory (which would expose them) is refused.
DOCKER_SOCKET_PATHS = (
    "/run/docker.sock",
    "/run/docker",
    "/run/containerd",
    "/run/gpuportal",
    "/var/lib/docker",
)

# Where the NVIDIA runtime can be told (when a site enables it) which GPUs a container gets by
# mounting files instead of setting NVIDIA_VISIBLE_DEVICES: never a mount target.
NVIDIA_DEVICE_MOUNT_DIRS = ("/run/nvidia-container-devices",)
# Read by the NVIDIA runtime; MIG configuration needs privileges no job has.
NVIDIA_MIG_VARIABLES = ("NVIDIA_MIG_CONFIG_DEVICES", "NVIDIA_MIG_MONITOR_DEVICES")

_CPUSET_RE = re.compile(r"^\d+(-\d+)?(,\d+(-\d+)?)*$")
_PORT_RE = re.compile(r"^(\d+)(/(tcp|udp|sctp))?$")


@dataclass(frozen=True)
class Mount:
    """A bind mount of ``source`` (a path on the slave) at ``target`` in the container."""

    source: str
    target: str
    read_only: bool = False


class PortMapping(NamedTuple):
    """container_port: 8080 or "8080/udp"; host_port None lets Docker pick a free port."""

    container_port: int | str
    host_port: int | None = None
    host_ip: str | None = None


class RefusedPorts(NamedTuple):
    """Host ports ``low``-``high`` (inclusive) no job may publish, and why (in refusals)."""

    low: int
    high: int
    why: str = "listed in PORTAL_REFUSED_HOST_PORTS"


# The site setting's default (PORTAL_REFUSED_HOST_PORTS): the privileged ports, Docker's engine
# ports, and the ports the portal and its services listen on where a slave may be the portal's
# own machine (as the `make run` slave "local" is): PostgreSQL, Redis, the SSH gateway, the web
# server, the session proxy and the TLS front end. A job publishing one of those would take its traffic.
DEFAULT_REFUSED_HOST_PORTS = ("1-1023", "2222", "2375-2377", "5432", "6379", "8000", "8001", "8443")
KNOWN_PORT_USES = {
    (1, 1023): "a privileged port (below 1024)",
    (2222, 2222): "the portal's SSH gateway",
    (2375, 2377): "a Docker engine port",
    (5432, 5432): "PostgreSQL's port",
    (6379, 6379): "Redis' port",
    (8000, 8000): "the portal's web server",
    (8443, 8443): "the portal's TLS front end",
}
# Where the portal picks host ports itself (the ports of OpenPAI tasks: gangs.launch), below
# Linux's ephemeral ports (32768-60999) where Docker picks random ones.
DEFAULT_AUTO_HOST_PORT_RANGE = (20000, 29999)
DEFAULT_HOST_ADDRESSES = ("0.0.0.0", "::")


def parse_port_range(text: str) -> tuple[int, int]:
    """ "20000-29999" or "8080" -> (low, high); ValueError when malformed or outside 1-65535."""
    low, sep, high = str(text).strip().partition("-")
    bounds = (int(low), int(high if sep else low))
    if not 1 <= bounds[0] <= bounds[1] <= 65535:
        raise ValueError(f"port range {text!r} is not within 1-65535 (low-high)")
    return bounds


def _known_use(low: int, high: int) -> str:
    """What the default list says of these ports (a single port inside a known range, such
    as 2375, is named like the range), else that the site listed them."""
    if (low, high) in KNOWN_PORT_USES:
        return KNOWN_PORT_USES[(low, high)]
    for (first, last), use in KNOWN_PORT_USES.items():
        if low == high and first <= low <= last:
            return use
    return RefusedPorts._field_defaults["why"]


def refused_ports(items: Iterable) -> tuple[RefusedPorts, ...]:
    """Settings text ("1-1023", "8000"), plain ports, (low, high) pairs or RefusedPorts, each
    with its reason (``KNOWN_PORT_USES`` for the default ones)."""
    result = []
    for item in items:
        if isinstance(item, RefusedPorts):
            low, high, why = item
        else:
            if isinstance(item, int):
                low, high = item, item
            elif isinstance(item, str):
                low, high = parse_port_range(item)
            else:
                low, high = (int(p) for p in item)
            why = _known_use(low, high)
        parse_port_range(f"{low}-{high}")  # the same bounds check for every shape
        result.append(RefusedPorts(int(low), int(high), why))
    return tuple(result)


@dataclass(frozen=True)
class PortPolicy:
    """Which host ports and addresses a job may publish on. A port Docker picks (no host
    port) is always allowed; a fixed one may be any port ``refused`` does not name (the
    privileged ports, Docker's and the portal's own by default) and, on a site that narrows
    them, must lie in ``allowed`` (inclusive); a host address, when given, must be one of
    ``addresses``. ``auto_range`` is where the portal picks host ports itself.

    GPULab's own example publishes ``"hostPort": 8080``: a fixed port outside any range is
    the user's choice there ("this might cause the job to fail if the port is already in
    use", which the portal reports: clusters.runtime.errors.host_port_busy)."""

    allowed: tuple[int, int] | None = None
    refused: tuple[RefusedPorts, ...] = refused_ports(DEFAULT_REFUSED_HOST_PORTS)
    addresses: tuple[str, ...] = DEFAULT_HOST_ADDRESSES
    auto_range: tuple[int, int] = DEFAULT_AUTO_HOST_PORT_RANGE

    def __post_init__(self):
        set_ = object.__setattr__
        if self.allowed is not None:
            set_(self, "allowed", parse_port_range("-".join(str(p) for p in self.allowed)))
        set_(self, "refused", refused_ports(self.refused))
        set_(self, "addresses", tuple(str(ipaddress.ip_address(a)) for a in self.addresses))
        set_(self, "auto_range", parse_port_range("-".join(str(p) for p in self.auto_range)))

    @classmethod
    def parse(
        cls,
        *,
        refused: Iterable[str],
        addresses: Iterable[str],
        allowed: str = "",
        auto_range: str = "20000-29999",
    ) -> PortPolicy:
        """From settings text: ["1-1023", "8000"], ["0.0.0.0", "::"], "" (no narrower range)
        or "20000-29999", and the range the portal picks ports from."""
        try:
            return cls(
                parse_port_range(allowed) if str(allowed).strip() else None,
                refused_ports(refused),
                tuple(addresses),
                parse_port_range(auto_range),
            )
        except ValueError as error:
            raise ValueError(f"invalid host port policy: {error}") from None

    def also_refusing(self, port: int, why: str) -> PortPolicy:
        """This policy with one more refused port (an engine's own TCP port)."""
        return replace(self, refused=(*self.refused, RefusedPorts(port, port, why)))

    def host_port_refusal(self, port: int) -> str | None:
        if self.allowed is not None:
            low, high = self.allowed
            if not low <= port <= high:
                return f"must be between {low} and {high} (this site's range for fixed host ports)"
        for low, high, why in self.refused:
            if low <= port <= high:
                return f"{port} is refused ({why})"
        return None

    def refuses(self, port: int) -> bool:
        return self.host_port_refusal(port) is not None

    def host_ip_refusal(self, address: str) -> str | None:
        try:
            canonical = str(ipaddress.ip_address(address))
        except ValueError:
            return "must be an IP address"
        if canonical not in self.addresses:
            return f"must be one of {', '.join(self.addresses)} (addresses jobs may publish on)"
        return None


@dataclass(frozen=True)
class ContainerSpec:
    """Everything a job container may get. Lists given by callers are stored as tuples.

    - command: argv (exec form) or None for the image's CMD (see commands.split_command)
    - cpuset_cpus: "0,1" or "0-3"; mem_limit_bytes: hard limit, swap included
    - tmpfs: container path -> size in bytes
    - gpu_device_ids: GPU indexes or UUIDs passed as an NVIDIA device request; None for none.
      gpu_all requests every GPU (the probe uses it).
    - port_mappings: PortMapping or plain (container_port, host_port, host_ip) tuples
    - folders: empty folders made in the container after create and before start, owned by
      the container's user (the job's working, input and output folders)
    """

    image: str
    command: tuple[str, ...] | None = None
    environment: Mapping[str, str] = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)
    cpuset_cpus: str | None = None
    mem_limit_bytes: int | None = None
    binds: tuple[Mount, ...] = ()
    tmpfs: Mapping[str, int] = field(default_factory=dict)
    gpu_device_ids: tuple[str, ...] | None = None
    gpu_all: bool = False
    port_mappings: tuple[PortMapping, ...] = ()
    working_dir: str | None = None
    user: str | None = None
    group_add: tuple[str, ...] = ()
    name: str | None = None
    shm_size_bytes: int | None = None
    folders: tuple[str, ...] = ()

    def __post_init__(self):
        # Frozen: normalise through object.__setattr__, once, so the engine sees one shape.
        set_ = object.__setattr__
        if self.command is not None:
            set_(self, "command", tuple(self.command))
        set_(self, "environment", {str(k): str(v) for k, v in dict(self.environment).items()})
        set_(self, "labels", {str(k): str(v) for k, v in dict(self.labels).items()})
        set_(self, "binds", tuple(self.binds))
        set_(self, "tmpfs", dict(self.tmpfs))
        if self.gpu_device_ids is not None:
            set_(self, "gpu_device_ids", tuple(str(g) for g in self.gpu_device_ids))
        set_(self, "port_mappings", tuple(PortMapping(*p) for p in self.port_mappings))
        set_(self, "group_add", tuple(str(g) for g in self.group_add))
        set_(self, "folders", tuple(str(f) for f in self.folders))


def refused(message: str) -> RuntimeFailure:
    return RuntimeFailure(f"refused: {message}", permanent=True)


def _canonical(path: str) -> str:
    """Normalised absolute path with /var/run folded onto /run (one is a link to the other)."""
    path = posixpath.normpath(path)
    if path.startswith("//"):
        path = "/" + path.lstrip("/")
    if path == "/var/run" or path.startswith("/var/run/"):
        path = "/run" + path[len("/var/run") :]
    return path


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def docker_socket_exposure(source: str, extra_sockets: Iterable[str] = ()) -> str | None:
    """Why binding ``source`` would hand the container a Docker socket, or None when it would not.

    Refused: the socket paths above, anything inside them, any parent of them ("/", "/run"),
    and any ``*.sock`` whose name mentions docker. ``extra_sockets`` adds the socket of the
    engine in use (e.g. /var/run/gpuportal/slave2.sock).
    """
    path = _canonical(source)
    name = posixpath.basename(path)
    if name.endswith(".sock") and ("docker" in name or "containerd" in name):
        return f"{source} is a Docker socket"
    for socket in (*DOCKER_SOCKET_PATHS, *extra_sockets):
        socket = _canonical(socket)
        if _within(path, socket):
            return f"{source} is or is inside {socket}"
        if _within(socket, path):
            return f"{source} contains {socket}"
    return None


def check_spec(
    spec: ContainerSpec,
    *,
    extra_sockets: Sequence[str] = (),
    port_policy: PortPolicy | None = None,
) -> None:
    """Raise a permanent RuntimeFailure when the spec asks for something no job may have.

    ``port_policy`` defaults to ``PortPolicy()``; the portal passes its site's policy."""
    port_policy = port_policy or PortPolicy()
    if not spec.image or not isinstance(spec.image, str):
        raise refused("an image is required")
    for mount in spec.binds:
        if not isinstance(mount, Mount):
            raise refused(f"bind {mount!r} is not a Mount")
        if not posixpath.isabs(mount.source) or not posixpath.isabs(mount.target):
            raise refused(f"bind {mount.source} -> {mount.target}: paths must be absolute")
        why = docker_socket_exposure(mount.source, extra_sockets)
        if why:
            raise refused(f"bind {why}")
        if posixpath.normpath(mount.target) == "/":
            raise refused("bind onto the container's / is not allowed")
        if why := _nvidia_device_target(mount.target):
            raise refused(f"bind {why}")
    for target, size in spec.tmpfs.items():
        if not posixpath.isabs(target):
            raise refused(f"tmpfs {target}: path must be absolute")
        if not isinstance(size, int) or size <= 0:
            raise refused(f"tmpfs {target}: size must be a positive number of bytes")
    if spec.cpuset_cpus is not None and not _CPUSET_RE.match(spec.cpuset_cpus):
        raise refused(f"cpuset {spec.cpuset_cpus!r} is not like '0,1' or '0-3'")
    for value, what in ((spec.mem_limit_bytes, "memory"), (spec.shm_size_bytes, "shm size")):
        if value is not None and (not isinstance(value, int) or value <= 0):
            raise refused(f"{what} limit must be a positive number of bytes")
    for mapping in spec.port_mappings:
        port = str(mapping.container_port)
        match = _PORT_RE.match(port)
        if not match or not 1 <= int(match.group(1)) <= 65535:
            raise refused(f"container port {port!r} is not a port number")
        if mapping.host_port is not None and not 0 < int(mapping.host_port) <= 65535:
            raise refused(f"host port {mapping.host_port!r} is not a port number")
        if mapping.host_port is not None:
            if why := port_policy.host_port_refusal(int(mapping.host_port)):
                raise refused(f"host port {mapping.host_port}: {why}")
        if mapping.host_ip is not None:
            if why := port_policy.host_ip_refusal(str(mapping.host_ip)):
                raise refused(f"host address {mapping.host_ip!r}: {why}")
    if spec.gpu_all and spec.gpu_device_ids:
        raise refused("ask for all GPUs or for GPU ids, not both")
    for folder in spec.folders:
        if not posixpath.isabs(folder) or posixpath.normpath(folder) in ("/", "//"):
            raise refused(f"folder {folder!r}: must be an absolute path below /")
        if ".." in folder.split("/"):
            raise refused(f"folder {folder!r}: must not contain '..'")
    _check_gpu_environment(spec)


def _nvidia_device_target(target: str) -> str | None:
    path = _canonical(target)
    for directory in NVIDIA_DEVICE_MOUNT_DIRS:
        if _within(path, directory) or _within(directory, path):
            return f"onto {target}: the NVIDIA runtime reads GPU choices there"
    return None


def _check_gpu_environment(spec: ContainerSpec) -> None:
    """The NVIDIA runtime (when it is an engine's default) obeys NVIDIA_VISIBLE_DEVICES: it
    may name no more than the device request grants."""
    env = spec.environment
    for name in NVIDIA_MIG_VARIABLES:
        if name in env:
            raise refused(f"environment {name}: MIG configuration is not for jobs")
    visible = env.get("NVIDIA_VISIBLE_DEVICES")
    if visible is None or spec.gpu_all:
        return
    if visible.strip().lower() == "all":
        raise refused("environment NVIDIA_VISIBLE_DEVICES=all without a request for all GPUs")
    if spec.gpu_device_ids is not None:
        granted = set(spec.gpu_device_ids)
        named = {item.strip() for item in visible.split(",") if item.strip()}
        if not named <= granted:
            raise refused(
                "environment NVIDIA_VISIBLE_DEVICES names GPUs outside the device request"
            )
