"""One Docker engine (a slave), behind a small interface. The only module importing ``docker``.

Every method raises RuntimeFailure (permanent or transient, see errors) and nothing else, so
callers never see SDK or HTTP exceptions. The SDK client is created on first use: building a
DockerEngine never touches the network.
"""

from __future__ import annotations

import ipaddress
import re
import socket
import ssl
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlparse

import docker
import requests
import urllib3
from docker import errors as docker_errors

from clusters.runtime.errors import (
    ContainerNotFound,
    ContainerNotRunning,
    RuntimeFailure,
    host_port_busy,
    is_permanent,
    redact,
    removed_on_failure,
)
from clusters.runtime.folders import folders_tar, numeric_owner
from clusters.runtime.spec import ContainerSpec, PortPolicy, check_spec
from clusters.runtime.stats import ContainerStats, parse_docker_stats

DEFAULT_TIMEOUT_S = 30.0
CONTAINER_EVENTS = ("start", "die")


@dataclass(frozen=True)
class EngineInfo:
    cpus: int
    memory_bytes: int
    server_version: str
    runtimes: tuple[str, ...]
    os: str
    kernel: str
    name: str
    default_runtime: str = "runc"
    architecture: str = ""


@dataclass(frozen=True)
class ContainerState:
    """A container as inspected. ``exit_code`` is None until it has stopped; ``host_ports``
    are GPULab-shaped ``{"containerPort", "hostPort", "hostIp"}`` dicts (published ports exist
    only while the container runs).

    Docker stamps ``started_at`` after start returns and ``finished_at`` from the exit event,
    so a container that exits at once can show ``finished_at`` a millisecond before
    ``started_at``: clamp run times at zero."""

    id: str
    name: str
    status: str
    running: bool
    exit_code: int | None
    oom_killed: bool
    started_at: datetime | None
    finished_at: datetime | None
    labels: dict[str, str] = field(default_factory=dict)
    host_ports: list[dict] = field(default_factory=list)
    error: str | None = None
    # The container's main process on the slave's host (Docker's State.Pid) while it runs;
    # 0 once it has stopped or when the engine cannot say.
    pid: int = 0


def parse_docker_time(value: str | None) -> datetime | None:
    """Docker's RFC 3339 times (nanoseconds, "Z"); its zero time means "never"."""
    if not value or value.startswith("0001-01-01"):
        return None
    match = re.match(r"^(.*T\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)$", value)
    if not match:
        return None
    fraction = (match.group(2) or ".0")[:7]  # Python keeps microseconds
    zone = "+00:00" if match.group(3) == "Z" else match.group(3)
    return datetime.fromisoformat(f"{match.group(1)}{fraction}{zone}")


def _host_ports(ports: Mapping | None, asked: Mapping | None = None) -> list[dict]:
    """One GPULab mapping per mapping asked for (``asked``: HostConfig.PortBindings, one
    entry per mapping, the same container port possibly twice), as a client reaches it,
    whatever Docker lists per address family. Without ``asked``: one per container port.

    On a host with IPv6, Docker publishes a port that names no host address twice, on
    ``0.0.0.0`` and on ``::``, and the two may get different host ports: each family's port is
    allocated on its own (on Docker 20.10 as soon as their counters drift apart).
    Reported: the IPv4 binding when there is one, else the IPv6 one. A port published on an
    address the job asked for has that one binding, reported with that address."""
    result = []
    for key, bindings in sorted((ports or {}).items(), key=_port_key_order):
        published = [b for b in bindings or () if b and b.get("HostPort")]
        wanted = [w or {} for w in (asked or {}).get(key) or ()] or [{}]
        for binding in _bindings_reached(published, wanted):
            result.append(
                {
                    "containerPort": int(str(key).split("/", 1)[0]),
                    "hostPort": int(binding["HostPort"]),
                    "hostIp": binding.get("HostIp") or "",
                }
            )
    return result


def _bindings_reached(published: list[dict], wanted: list[dict]) -> list[dict]:
    """For each binding asked for, the published one a client reaches it at (each published
    binding used once): its fixed port and address when it named them, IPv4 first."""
    left = list(published)
    chosen = []
    for want in wanted:
        address, port = _ip_text(want.get("HostIp")), str(want.get("HostPort") or "")
        candidates = [
            b
            for b in left
            if (not port or str(b.get("HostPort")) == port)
            and (not address or _ip_text(b.get("HostIp")) == address)
        ]
        if not candidates:
            continue
        ipv4 = [b for b in candidates if ":" not in (b.get("HostIp") or "")]
        binding = (ipv4 or candidates)[0]
        left.remove(binding)
        chosen.append(binding)
    return chosen


def _ip_text(address: object) -> str:
    """An address as one spelling ("::" for "0:0::0"); "" for none."""
    text = str(address or "")
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        return text


def _port_key_order(item: tuple) -> tuple[int, str]:
    """Docker's "8080/tcp" keys in port order (10000 after 8080), then by protocol."""
    number, _, protocol = str(item[0]).partition("/")
    return (int(number), protocol)


def _state(data: Mapping) -> ContainerState:
    state = data.get("State") or {}
    stopped = state.get("Status") in ("exited", "dead")
    asked = (data.get("HostConfig") or {}).get("PortBindings")
    return ContainerState(
        id=data["Id"],
        name=(data.get("Name") or "").lstrip("/"),
        status=state.get("Status") or "",
        running=bool(state.get("Running")),
        exit_code=state.get("ExitCode") if stopped else None,
        oom_killed=bool(state.get("OOMKilled")),
        started_at=parse_docker_time(state.get("StartedAt")),
        finished_at=parse_docker_time(state.get("FinishedAt")),
        labels=dict((data.get("Config") or {}).get("Labels") or {}),
        # Docker drops published ports when a container stops: a job that exited within a
        # second of starting would report none. The fixed ones it asked for still hold.
        host_ports=_host_ports((data.get("NetworkSettings") or {}).get("Ports"), asked)
        or (_host_ports(asked, asked) if stopped else []),
        error=state.get("Error") or None,
        pid=int(state.get("Pid") or 0),
    )


def _seconds(value: datetime | float | int | None) -> str | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        value = value.timestamp()
    return f"{float(value):.9f}"


class _APIClient(docker.APIClient):
    """docker's client, except that a slave's own CA file wins over requests' environment.

    requests lets ``REQUESTS_CA_BUNDLE``/``CURL_CA_BUNDLE`` replace the session's ``verify`` on
    every request, so on a host with either set, an engine's TLS certificate (signed by the
    site's own CA) would fail verification against the system bundle.
    """

    def merge_environment_settings(self, url, proxies, stream, verify, cert):
        merged = super().merge_environment_settings(url, proxies, stream, verify, cert)
        if isinstance(self.verify, str):  # the CA file set from the slave's TLS configuration
            merged["verify"] = self.verify
        return merged


class DockerEngine:
    """A Docker engine at ``unix:///path``, ``tcp://host:port`` (TLS when given files) or
    ``http(s)://``. ``timeout`` bounds each request (not streams: events, long stops)."""

    def __init__(
        self,
        url: str,
        *,
        tls_ca: str | None = None,
        tls_cert: str | None = None,
        tls_key: str | None = None,
        timeout: float = DEFAULT_TIMEOUT_S,
        port_policy: PortPolicy | None = None,
    ):
        parsed = urlparse(url)
        if parsed.scheme not in ("unix", "tcp", "http", "https"):
            raise RuntimeFailure(f"unsupported Docker URL {url!r}", permanent=True)
        if bool(tls_cert) != bool(tls_key):
            raise RuntimeFailure("TLS needs both a client certificate and a key", permanent=True)
        self.url = url
        self.timeout = timeout
        # Host ports and addresses containers may publish (the site's settings, see
        # clusters.services.site_port_policy); PortPolicy() when not given. An engine reached
        # over TCP never lets a job publish its own port, whatever the site lists.
        self.port_policy = port_policy or PortPolicy()
        if parsed.scheme in ("tcp", "http", "https") and parsed.port:
            self.port_policy = self.port_policy.also_refusing(
                parsed.port, "this slave's Docker engine"
            )
        self._tls = None
        if tls_ca or tls_cert:
            self._tls = docker.tls.TLSConfig(
                client_cert=(tls_cert, tls_key) if tls_cert and tls_key else None,
                ca_cert=tls_ca or None,
                verify=tls_ca or True,
            )
        # The engine's own socket is refused as a bind source like the standard ones.
        self._own_sockets = (parsed.path,) if parsed.scheme == "unix" else ()
        self._client: docker.APIClient | None = None

    def __repr__(self) -> str:
        return f"DockerEngine({self.url!r})"

    # -- plumbing ---------------------------------------------------------------------------

    @property
    def api(self) -> docker.APIClient:
        if self._client is None:
            with self._translated("connect"):
                self._client = _APIClient(
                    base_url=self.url,
                    version="auto",
                    timeout=self.timeout,  # type: ignore[arg-type]  # requests takes a float
                    tls=self._tls or False,
                )
        return self._client

    @property
    def _private(self) -> Any:
        """The SDK's own request helpers (``_url``, ``_get``, ``_put``, ``_post_json``,
        ``_raise_for_status``) for the Engine API calls it has no method for; not typed."""
        return self.api

    @contextmanager
    def _translated(
        self, operation: str, *, secrets=(), container: str | None = None, what: str = ""
    ):
        """Turn SDK/HTTP exceptions into RuntimeFailure, secrets redacted. ``what`` prefixes
        the message (default: the operation)."""
        what = what or operation
        try:
            yield
        except RuntimeFailure:
            raise
        except docker_errors.APIError as exc:
            status = exc.status_code
            message = redact(f"{what}: {exc.explanation or exc}", secrets)
            if container and status == 404 and "container" in message.lower():
                raise ContainerNotFound(message) from None
            if container and status == 409 and "is not running" in message:
                raise ContainerNotRunning(message) from None
            if (busy := host_port_busy(message, status_code=status)) is not None:
                raise busy from None
            permanent = is_permanent(message, status_code=status, operation=operation)
            raise RuntimeFailure(message, permanent=permanent, status_code=status) from None
        except (
            requests.exceptions.RequestException,
            urllib3.exceptions.HTTPError,  # a stream broken mid-read (engine restarted)
            docker_errors.DockerException,
            OSError,
        ) as exc:
            # Never reached the engine, or it stopped answering: later may work.
            message = redact(f"{what} on {self.url}: {exc}", secrets)
            raise RuntimeFailure(message, permanent=False) from None

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def __enter__(self) -> DockerEngine:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- engine -----------------------------------------------------------------------------

    def info(self) -> EngineInfo:
        with self._translated("info"):
            data = self.api.info()
        return EngineInfo(
            cpus=int(data.get("NCPU") or 0),
            memory_bytes=int(data.get("MemTotal") or 0),
            server_version=data.get("ServerVersion") or "",
            runtimes=tuple(sorted((data.get("Runtimes") or {}).keys())),
            os=data.get("OperatingSystem") or "",
            kernel=data.get("KernelVersion") or "",
            name=data.get("Name") or "",
            default_runtime=data.get("DefaultRuntime") or "runc",
            architecture=data.get("Architecture") or "",
        )

    def image_tags(self) -> list[str]:
        """Every tagged image on the engine, ``repo:tag`` (untagged ones left out), sorted."""
        with self._translated("list images"):
            images = self.api.images()
        tags = {
            t for image in images for t in (image.get("RepoTags") or []) if t != "<none>:<none>"
        }
        return sorted(tags)

    def image_present(self, ref: str) -> bool:
        with self._translated("inspect image"):
            try:
                self.api.inspect_image(ref)
            except docker_errors.ImageNotFound:
                return False
        return True

    def pull(
        self,
        repository: str,
        tag: str = "latest",
        *,
        username: str | None = None,
        password: str | None = None,
    ) -> None:
        """Pull ``repository:tag``; the password (and username:password) never appears in
        errors. Registry errors reported inside the progress stream raise too."""
        auth = {"username": username, "password": password} if username else None
        secrets = (password, f"{username}:{password}" if username else None)
        # A digest reference ("name@sha256:...") carries no tag.
        pull_tag = tag or (None if "@" in repository else "latest")
        shown = f"pull {repository}:{pull_tag}" if pull_tag else f"pull {repository}"
        with self._translated("pull", secrets=secrets, what=shown):
            for line in self.api.pull(
                repository, tag=pull_tag, stream=True, decode=True, auth_config=auth
            ):
                if isinstance(line, dict) and line.get("error"):
                    message = redact(f"{shown}: {line['error']}", secrets)
                    # The stream answered 200: judge by the message as a 500 would be.
                    permanent = is_permanent(message, status_code=500, operation="pull")
                    raise RuntimeFailure(message, permanent=permanent, status_code=500)

    # -- containers -------------------------------------------------------------------------

    def run(self, spec: ContainerSpec) -> str:
        """Create and start a container; returns its id. A container that fails to start is
        removed again, so a failed run leaves nothing behind."""
        container_id = self.create(spec)
        with removed_on_failure(self, container_id):
            self.start(container_id)
        return container_id

    def create(self, spec: ContainerSpec) -> str:
        """Check the spec, create the container and make ``spec.folders`` in it, without
        starting it (files can then be copied in with ``put_archive``); returns its id. A
        container whose folders cannot be made is removed again."""
        check_spec(spec, extra_sockets=self._own_sockets, port_policy=self.port_policy)
        with self._translated("create"):
            created = self.api.create_container(**self._create_kwargs(spec))
        container_id = created["Id"]
        if spec.folders:
            try:
                self._folders_make(container_id, spec)
            except RuntimeFailure:
                try:
                    self.remove(container_id)
                except RuntimeFailure:
                    pass  # the first failure is the one to report
                raise
        return container_id

    def put_archive(self, container_id: str, path: str, tar_bytes) -> None:
        """Unpack the tar ``tar_bytes`` (bytes or a file) at ``path`` (an existing folder)
        inside a created or running container, owners and modes as in the tar."""
        with self._translated("copy to", container=container_id):
            self.api.put_archive(container_id, path, tar_bytes)

    def _create_kwargs(self, spec: ContainerSpec) -> dict:
        from docker.types import DeviceRequest, Mount

        device_requests = None
        if spec.gpu_all or spec.gpu_device_ids:
            device_requests = [
                DeviceRequest(
                    driver="nvidia",
                    count=-1 if spec.gpu_all else 0,
                    device_ids=list(spec.gpu_device_ids or ()),
                    capabilities=[["gpu"]],
                )
            ]
        ports: list[int | str | tuple[str, ...]] = []
        # A list of bindings per container port: the same port mapped twice (two host ports
        # onto one container port) keeps both.
        bindings: dict[int | str, list[Any]] = {}
        for mapping in spec.port_mappings:
            key = str(mapping.container_port)
            port = key if "/" in key else int(key)
            if port not in bindings:
                ports.append(tuple(key.split("/")) if "/" in key else port)
            host_ip, host_port = mapping.host_ip, mapping.host_port
            binding: Any = host_port
            if host_ip:
                binding = (host_ip, host_port) if host_port else (host_ip,)
            bindings.setdefault(port, []).append(binding)
        host_config = self.api.create_host_config(
            cpuset_cpus=spec.cpuset_cpus,
            mem_limit=spec.mem_limit_bytes,
            # Equal to mem_limit: no swap on top of the memory the job was given.
            memswap_limit=spec.mem_limit_bytes,
            shm_size=spec.shm_size_bytes,
            mounts=[
                Mount(target=m.target, source=m.source, type="bind", read_only=m.read_only)
                for m in spec.binds
            ]
            or None,
            tmpfs={target: f"size={size}" for target, size in spec.tmpfs.items()} or None,
            device_requests=device_requests,
            port_bindings=bindings or None,
            group_add=list(spec.group_add) or None,
            # Fixed policy, whatever the caller asked: see spec.py.
            security_opt=["no-new-privileges"],
            privileged=False,
            network_mode="bridge",
        )
        return {
            "image": spec.image,
            "command": list(spec.command) if spec.command is not None else None,
            "environment": dict(spec.environment),
            "labels": dict(spec.labels),
            "name": spec.name,
            "working_dir": spec.working_dir,
            "user": spec.user,
            "ports": ports or None,
            "host_config": host_config,
            # Never copy the portal host's ~/.docker/config.json proxies into jobs.
            "use_config_proxy": False,
        }

    def _folders_make(self, container_id: str, spec: ContainerSpec) -> None:
        """Unpack ``spec.folders`` into the created container, owned by its user."""
        owner = numeric_owner(spec.user)
        data = folders_tar(spec.folders, owner=owner or (0, 0))
        with self._translated("copy to", container=container_id):
            response = self._private._put(
                self._private._url("/containers/{0}/archive", container_id),
                # A user name: Docker resolves it in the image and owns the entries to it.
                params={"path": "/", "copyUIDGID": "false" if owner else "true"},
                data=data,
            )
            self._private._raise_for_status(response)

    def start(self, container_id: str) -> None:
        """Start a created (or stopped) container, e.g. one a crash left created only."""
        with self._translated("start", container=container_id):
            self.api.start(container_id)

    def inspect(self, container_id: str) -> ContainerState:
        with self._translated("inspect", container=container_id):
            return _state(self.api.inspect_container(container_id))

    def list_by_labels(self, labels: Mapping[str, str]) -> list[ContainerState]:
        """Every container (running or not) carrying all of ``labels``."""
        filters = {"label": [f"{key}={value}" for key, value in labels.items()]}
        with self._translated("list"):
            summaries = self.api.containers(all=True, filters=filters)
        states = []
        for summary in summaries:
            try:
                states.append(self.inspect(summary["Id"]))
            except ContainerNotFound:  # removed between list and inspect
                continue
        return states

    def find_by_label(self, key: str, value: str) -> list[ContainerState]:
        return self.list_by_labels({key: value})

    def signal(self, container_id: str, signal_name: str) -> None:
        """Send a signal ("USR1", "SIGTERM", ...) to the container's main process.
        Raises ContainerNotRunning when it has already stopped."""
        with self._translated("signal", container=container_id):
            self.api.kill(container_id, signal=signal_name)

    def stop(self, container_id: str, *, timeout_s: int) -> None:
        """SIGTERM, then SIGKILL after ``timeout_s``. Stopping a stopped container is fine."""
        with self._translated("stop", container=container_id):
            self.api.stop(container_id, timeout=int(timeout_s))

    def kill(self, container_id: str) -> None:
        """SIGKILL; a container that has already stopped is left as it is."""
        try:
            self.signal(container_id, "SIGKILL")
        except ContainerNotRunning:
            pass

    def wait(self, container_id: str, *, timeout_s: float) -> int:
        """Block until the container stops; its exit code. Transient failure on timeout."""
        with self._translated("wait", container=container_id):
            # A float timeout goes to requests as it is (the SDK's types say int).
            status = self.api.wait(container_id, timeout=timeout_s)  # type: ignore[arg-type]
            return int(status["StatusCode"])

    def remove(self, container_id: str, *, force: bool = True) -> None:
        """Remove the container (killing it when ``force``); a missing one is fine."""
        try:
            with self._translated("remove", container=container_id):
                self.api.remove_container(container_id, force=force)
        except ContainerNotFound:
            pass

    def logs(
        self, container_id: str, *, since: float | None = None, timestamps: bool = False
    ) -> bytes:
        """stdout and stderr together. The engine captures the two streams through separate
        pipes, so lines of one may be reordered against the other. ``since`` (UNIX seconds,
        inclusive) and ``timestamps`` (each entry prefixed with its RFC 3339 nano time) let a
        caller follow a log without reading it whole every time."""
        with self._translated("logs", container=container_id):
            return self.api.logs(
                container_id,
                stdout=True,
                stderr=True,
                timestamps=timestamps,
                since=since if since and since > 0 else None,
            )

    def log_frames(
        self, container_id: str, *, since: float | None = None, timestamps: bool = False
    ) -> list[tuple[int, bytes]]:
        """Like ``logs``, with each entry's stream kept: ``(1, stdout bytes)`` or ``(2, stderr
        bytes)``. The SDK's ``logs`` joins Docker's multiplexed frames and drops the stream
        byte; this reads the same endpoint and splits the frames itself."""
        params = {"stdout": 1, "stderr": 1, "timestamps": int(timestamps), "tail": "all"}
        if since and since > 0:
            params["since"] = since
        with self._translated("logs", container=container_id):
            url = self._private._url("/containers/{0}/logs", container_id)
            response = self._private._get(url, params=params, stream=False)
            self._private._raise_for_status(response)
            return split_frames(response.content)

    def events(
        self,
        *,
        since: datetime | float | None = None,
        until: datetime | float | None = None,
        filters: Mapping[str, object] | None = None,
    ) -> Iterator[dict]:
        """Container start/die events as dicts: ``id``, ``action`` ("start"/"die"), ``time``
        (aware datetime), ``exit_code`` (die only), ``name``, ``image``, ``labels``.

        ``filters`` adds Docker event filters, e.g. ``{"label": "gpuportal.instance=abc"}``.
        The request is sent before this returns, so nothing that happens afterwards is
        missed. Without ``until`` the stream never ends: close the iterator (or the engine)
        to stop it; when the engine goes away (even cleanly) it raises a transient
        RuntimeFailure.
        """
        merged: dict[str, object] = {"type": "container", "event": list(CONTAINER_EVENTS)}
        merged.update(filters or {})
        with self._translated("events"):
            # The SDK passes a string time on as is (nanoseconds; its types say int).
            stream = self.api.events(  # type: ignore[call-overload]
                since=_seconds(since), until=_seconds(until), filters=merged, decode=True
            )
        return self._event_dicts(stream, endless=until is None)

    def _event_dicts(self, stream, *, endless: bool) -> Iterator[dict]:
        try:
            with self._translated("events"):
                for raw in stream:
                    yield self._event(raw)
            if endless:  # only an engine going away ends a stream without "until"
                raise RuntimeFailure(f"event stream of {self.url} ended", permanent=False)
        finally:
            stream.close()

    @staticmethod
    def _event(raw: Mapping) -> dict:
        attributes = dict((raw.get("Actor") or {}).get("Attributes") or {})
        action = raw.get("Action") or raw.get("status") or ""
        nano = raw.get("timeNano")
        seconds = nano / 1e9 if nano else float(raw.get("time") or 0)
        exit_code = attributes.pop("exitCode", None)
        name, image = attributes.pop("name", ""), attributes.pop("image", "")
        return {
            "id": (raw.get("Actor") or {}).get("ID") or raw.get("id") or "",
            "action": action,
            "time": datetime.fromtimestamp(seconds, tz=UTC),
            "exit_code": int(exit_code) if exit_code is not None else None,
            "name": name,
            "image": image,
            "labels": attributes,
        }

    # -- interactive access: the SSH gateway (ssh/) -----------------------------------------

    def exec_open(
        self,
        container_id: str,
        command: list[str],
        *,
        tty: bool,
        environment: Mapping[str, str] | None = None,
    ) -> ExecStream:
        """Start ``command`` in the running container, as the container's own user, with stdin
        open; returns its stream. With ``tty`` the stream carries raw terminal bytes; without,
        Docker's multiplexed frames (see ExecStream.demux)."""
        with self._translated("exec", container=container_id):
            created = self.api.exec_create(
                container_id,
                list(command),
                stdin=True,
                stdout=True,
                stderr=True,
                tty=tty,
                environment=dict(environment or {}) or None,
            )
            exec_id = created["Id"]
            response = self._private._post_json(
                self._private._url("/exec/{0}/start", exec_id),
                headers={"Connection": "Upgrade", "Upgrade": "tcp"},
                data={"Tty": tty, "Detach": False},
                stream=True,
            )
            self._private._raise_for_status(response)
            buffered = response.raw._fp.fp  # the reader that read the HTTP headers
            sock = getattr(buffered.raw, "_sock", buffered.raw)
            # Output that arrived with the headers already sits in that reader: take it, so
            # a fast command's first bytes are not lost.
            pending = b""
            peek = getattr(buffered, "peek", None)
            if peek is not None:
                sock.setblocking(False)
                try:
                    pending = buffered.read1(65536) or b""
                except (BlockingIOError, OSError):
                    pending = b""
                finally:
                    sock.setblocking(True)
        return ExecStream(exec_id=exec_id, sock=sock, pending=pending, response=response)

    def exec_resize(self, exec_id: str, *, width: int, height: int) -> None:
        with self._translated("exec resize"):
            self.api.exec_resize(exec_id, height=max(1, height), width=max(1, width))

    def exec_exit_code(self, exec_id: str) -> int | None:
        """The exec's exit code, None while it still runs."""
        with self._translated("exec inspect"):
            data = self.api.exec_inspect(exec_id)
        return None if data.get("Running") else data.get("ExitCode")

    def stats(self, container_id: str) -> ContainerStats:
        """One reading of the container's CPU time, memory and network counters."""
        with self._translated("stats", container=container_id):
            raw = self.api.stats(container_id, stream=False, one_shot=True)
        return parse_docker_stats(raw)

    def container_address(self, container_id: str) -> str | None:
        """The container's IP address on its (bridge) network, None when it has none."""
        with self._translated("inspect", container=container_id):
            data = self.api.inspect_container(container_id)
        settings_ = data.get("NetworkSettings") or {}
        if settings_.get("IPAddress"):
            return settings_["IPAddress"]
        for network in (settings_.get("Networks") or {}).values():
            if (network or {}).get("IPAddress"):
                return network["IPAddress"]
        return None

    def path_stat(self, container_id: str, path: str) -> dict | None:
        """Docker's stat of ``path`` inside the container (``name``, ``size``, ``mode`` as
        POSIX st_mode, ``mtime`` in UNIX seconds, ``linkTarget``); None when it is missing.
        Needs no program inside the image."""
        import base64
        import json

        with self._translated("stat", container=container_id):
            response = self.api.head(
                self._private._url("/containers/{0}/archive", container_id), params={"path": path}
            )
            if response.status_code == 404 and "container" not in response.text.lower():
                return None
            self._private._raise_for_status(response)
        header = response.headers.get("X-Docker-Container-Path-Stat") or ""
        if not header:
            return None
        data = json.loads(base64.b64decode(header))
        mtime = parse_docker_time(data.get("mtime"))
        return {
            "name": data.get("name") or "",
            "size": int(data.get("size") or 0),
            "mode": _go_mode_to_posix(int(data.get("mode") or 0)),
            "mtime": int(mtime.timestamp()) if mtime else 0,
            "linkTarget": data.get("linkTarget") or "",
        }

    def archive_get(self, container_id: str, path: str) -> Iterator[bytes]:
        """A tar stream of ``path`` inside the container (Docker's ``cp`` from a container)."""
        with self._translated("copy from", container=container_id):
            stream, _stat = self.api.get_archive(container_id, path)
        return stream

    def get_archive(self, container_id: str, path: str) -> Iterator[bytes]:
        """The protocol's name for ``archive_get``: a tar stream of ``path`` (a running or
        an exited container; the job's outputs are read after it ended)."""
        return self.archive_get(container_id, path)

    def archive_put(self, container_id: str, directory: str, data) -> None:
        """Unpack the tar ``data`` (bytes or a file) into ``directory`` inside the container
        (Docker's ``cp -a``): new files belong to the container's configured user."""
        with self._translated("copy to", container=container_id):
            response = self._private._put(
                self._private._url("/containers/{0}/archive", container_id),
                params={"path": directory, "copyUIDGID": "true"},
                data=data,
            )
            self._private._raise_for_status(response)


@dataclass(eq=False)
class ExecStream:
    """A started exec: its id and the hijacked connection to the engine (``pending`` holds
    bytes read before the caller got it; ``response`` is kept alive for TLS engines).

    ``read`` and ``write`` may be called from two threads at once: on a TLS connection (which
    must not be read and written concurrently) they take turns under a lock."""

    exec_id: str
    sock: socket.socket
    pending: bytes = b""
    response: Any = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def tls(self) -> bool:
        return isinstance(self.sock, ssl.SSLSocket)

    def read(self, size: int = 65536) -> bytes:
        """The next bytes of output (raw, or multiplexed frames without a TTY); b"" at the
        end. Blocks."""
        if self.pending:
            data, self.pending = self.pending, b""
            return data
        if not self.tls:
            return self.sock.recv(size)
        while True:
            with self._lock:
                self.sock.settimeout(0.05)
                try:
                    return self.sock.recv(size)
                except TimeoutError:
                    pass
            time.sleep(0)  # let a writer take the lock

    def write(self, data: bytes) -> None:
        if not self.tls:
            self.sock.sendall(data)
            return
        with self._lock:
            self.sock.settimeout(DEFAULT_TIMEOUT_S)
            self.sock.sendall(data)

    def close_input(self) -> bool:
        """End of input for the exec; False where the connection cannot half-close (TLS)."""
        if self.tls:
            return False
        try:
            self.sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        return True

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass
        if self.response is not None:
            self.response.close()


# Go's os.FileMode bits (Docker's stat) -> POSIX st_mode.
_GO_DIR, _GO_SYMLINK, _GO_DEVICE, _GO_PIPE, _GO_SOCKET = 1 << 31, 1 << 27, 1 << 26, 1 << 25, 1 << 24
_GO_SETUID, _GO_SETGID, _GO_CHARDEV, _GO_STICKY = 1 << 23, 1 << 22, 1 << 21, 1 << 20


def _go_mode_to_posix(mode: int) -> int:
    import stat

    result = mode & 0o777
    if mode & _GO_DIR:
        result |= stat.S_IFDIR
    elif mode & _GO_SYMLINK:
        result |= stat.S_IFLNK
    elif mode & _GO_PIPE:
        result |= stat.S_IFIFO
    elif mode & _GO_SOCKET:
        result |= stat.S_IFSOCK
    elif mode & _GO_DEVICE:
        result |= stat.S_IFCHR if mode & _GO_CHARDEV else stat.S_IFBLK
    else:
        result |= stat.S_IFREG
    result |= stat.S_ISUID if mode & _GO_SETUID else 0
    result |= stat.S_ISGID if mode & _GO_SETGID else 0
    result |= stat.S_ISVTX if mode & _GO_STICKY else 0
    return result


def split_frames(data: bytes) -> list[tuple[int, bytes]]:
    """Docker's multiplexed log stream -> ``[(stream, payload)]`` (1 stdout, 2 stderr).

    Each frame: one byte stream type, three zero bytes, a 4-byte big-endian length, the payload.
    A container with a TTY has no frames: its bytes are all stdout.
    """
    if len(data) >= 8 and (data[0] not in (0, 1, 2) or data[1:4] != b"\0\0\0"):
        return [(1, data)]
    frames, at = [], 0
    while at + 8 <= len(data):
        stream = data[at]
        size = int.from_bytes(data[at + 4 : at + 8], "big")
        frames.append((2 if stream == 2 else 1, data[at + 8 : at + 8 + size]))
        at += 8 + size
    return frames
