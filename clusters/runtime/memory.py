"""An engine in pure Python: the ``protocol.Engine`` calls, no daemon, no Docker.

For fast tests and demos without Docker (``PORTAL_ENGINE=memory`` or a slave URL
``memory://name``, see ``clusters.services.engine_for``). It follows the same contract as
``DockerEngine`` (tests/integration/contract/ runs the same assertions on both):

- One daemon per URL, process-wide: two engines built for the same URL see the same
  containers, images and events, as two clients of one Docker daemon do. ``reset()`` forgets
  them all (tests call it between tests).
- ``run`` applies ``spec.check_spec`` exactly as DockerEngine does, then "creates" and
  "starts" the container. A container runs a tiny model of busybox ``sh``: ``sh -c SCRIPT``
  with ``echo``, ``exit N``, ``sleep N``, ``trap "ACTION" USR1``, ``while``/``for`` loops,
  ``&&``/``||``, pipes into ``sort``, ``env``, ``pwd``, ``id -u``, ``nproc`` and ``$VAR``;
  argv forms such as ``["sleep", "60"]`` or ``["true"]``; an unknown executable fails at start
  like Docker's "executable file not found". Time is real: a sleeping container wakes when
  its time comes, observed by whichever call looks next (no threads of its own).
- Signals as Docker's PID 1 gets them: a trapped signal runs its action, any other signal but
  SIGKILL is ignored; ``stop`` sends SIGTERM and kills (exit 137) after the timeout.
- Containers have files: ``spec.folders`` (made by ``create``, before any start, as Docker's
  engine does), ``put_archive`` (a tar unpacked at a path: a job's staged inputs),
  ``>``/``>>`` redirections to a path, ``mkdir`` and ``write_file``; ``get_archive`` returns a
  tar of a path as Docker names it (the folder's basename first); ``container_files`` lists
  the regular files.
- Tests steer it with ``finish`` (the container exits now, optionally OOM-killed),
  ``write_log``, ``fail_next`` (the next call of an operation raises a permanent or transient
  RuntimeFailure; HostPortBusy when its message says a port is taken, as Docker's would),
  ``set_unreachable`` (every call fails as an unreachable daemon does) and ``add_image``.
- Host ports: a fixed host port that another running container of the same daemon publishes
  fails the start ("port is already allocated"), one that ``host_port_occupy`` took (a
  process outside the engine: another engine on the machine, another installation) fails it
  with "address already in use", both as HostPortBusy; ports it picks itself skip both, as
  Docker retries its own picks.
- The registry it pulls from has every image except names containing ``no-such``, and cannot
  be reached at IP addresses or ``localhost`` (connection refused, like the Docker tests'
  ``127.0.0.1:1``).
"""

from __future__ import annotations

import io
import ipaddress
import itertools
import os
import posixpath
import tarfile
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import cast
from urllib.parse import urlparse

from clusters.runtime.engine import ContainerState, EngineInfo
from clusters.runtime.errors import (
    ContainerNotFound,
    ContainerNotRunning,
    HostPortBusy,
    RuntimeFailure,
    host_port_busy,
    is_permanent,
    redact,
    removed_on_failure,
)
from clusters.runtime.spec import ContainerSpec, PortPolicy, check_spec
from clusters.runtime.stats import ContainerStats

NS = 10**9
KILLED = 137  # 128 + SIGKILL
# Commands a container may exec (busybox applets the test image has). Those without a model
# below succeed silently; httpd serves until stopped.
APPLETS = frozenset(
    "sh ash bash echo true false sleep env printenv pwd id nproc cat sort head tail tr wc grep "
    "ls ln touch mkdir rm cp mv chmod chown df du date uname hostname whoami test [ printf "
    "httpd nc wget seq yes tee basename dirname stat find sync kill".split()
)
_SERVERS = frozenset({"httpd", "nc", "yes"})


# --- the daemons -------------------------------------------------------------------------

_daemons: dict[str, _Daemon] = {}
_daemons_lock = threading.Lock()
# Host ports held outside every in-memory engine (host_port_occupy): what another process on
# the slave's machine would hold.
_ports_taken_outside: set[int] = set()


def host_port_occupy(port: int) -> None:
    """Take ``port`` on the host, outside the engines, until ``host_port_release``."""
    with _daemons_lock:
        _ports_taken_outside.add(int(port))


def host_port_release(port: int) -> None:
    with _daemons_lock:
        _ports_taken_outside.discard(int(port))


def daemon_for(url: str) -> _Daemon:
    with _daemons_lock:
        daemon = _daemons.get(url)
        if daemon is None:
            daemon = _daemons[url] = _Daemon(url)
        return daemon


def reset() -> None:
    """Forget every in-memory daemon; open event streams end (transient failure)."""
    with _daemons_lock:
        daemons = list(_daemons.values())
        _daemons.clear()
        _ports_taken_outside.clear()
    for daemon in daemons:
        with daemon.cond:
            daemon.generation += 1
            daemon.cond.notify_all()


class _Exit(Exception):
    def __init__(self, code: int):
        self.code = code


@dataclass
class _Container:
    id: str
    name: str
    spec: ContainerSpec
    status: str = "created"  # created | running | exited
    exit_code: int | None = None
    oom_killed: bool = False
    started_at: datetime | None = None
    finished_at: datetime | None = None
    log: list[tuple[int, bytes]] = field(default_factory=list)  # (ns, one line)
    stderr_ns: set[int] = field(default_factory=set)  # entries written to stderr
    host_ports: list[dict] = field(default_factory=list)
    program: Generator | None = None
    wake_at: float | None = None  # seconds since the epoch; None: blocked forever
    handlers: dict[str, str] = field(default_factory=dict)
    last_status: int = 0  # $? of the model shell
    # The container's own files (what get_archive reads): absolute path -> bytes, None for a
    # folder. Written by spec.folders, ``>``/``>>`` redirections, ``mkdir`` and write_file.
    files: dict[str, bytes | None] = field(default_factory=dict)

    def file_write(self, path: str, data: bytes, *, append: bool = False) -> bool:
        """Write a file as ``sh`` would: False when its folder does not exist."""
        path = posixpath.normpath(path)
        parent = posixpath.dirname(path)
        if parent != "/" and self.files.get(parent, b"") is not None:
            return False
        if self.files.get(path, b"") is None:
            return False
        self.files[path] = (self.files.get(path) or b"") + data if append else data
        return True

    def folder_make(self, path: str) -> None:
        parts = posixpath.normpath(path).strip("/").split("/")
        for depth in range(1, len(parts) + 1):
            self.files.setdefault("/" + "/".join(parts[:depth]), None)

    stats: ContainerStats = field(default_factory=lambda: ContainerStats(0, 0, None, 0, 0))

    @property
    def running(self) -> bool:
        return self.status == "running"

    def state(self) -> ContainerState:
        return ContainerState(
            id=self.id,
            name=self.name,
            status=self.status,
            running=self.running,
            exit_code=self.exit_code if self.status == "exited" else None,
            oom_killed=self.oom_killed,
            started_at=self.started_at,
            finished_at=self.finished_at,
            labels=dict(self.spec.labels),
            host_ports=[dict(p) for p in self.host_ports] if self.running else self._fixed_ports(),
        )

    def _fixed_ports(self) -> list[dict]:
        """As Docker: a stopped container publishes nothing, but inspect still shows the fixed
        host ports it asked for (HostConfig.PortBindings)."""
        fixed = [
            {
                "containerPort": int(str(m.container_port).split("/")[0]),
                "hostPort": int(m.host_port),
                "hostIp": m.host_ip or "",
            }
            for m in self.spec.port_mappings
            if m.host_port
        ]
        return sorted(fixed, key=lambda p: p["containerPort"])


class _Daemon:
    """The shared state behind every MemoryEngine of one URL."""

    def __init__(self, url: str):
        self.url = url
        self.cond = threading.Condition(threading.RLock())
        self.containers: dict[str, _Container] = {}
        self.events: list[dict] = []
        self.images: set[str] = {_normal("gpuportal/busybox:latest")}
        name = urlparse(url).netloc or urlparse(url).path.rsplit("/", 1)[-1] or "memory"
        self.info = EngineInfo(
            cpus=16,
            memory_bytes=64 * 1024**3,
            server_version="memory",
            runtimes=("runc",),
            os="in-memory engine",
            kernel="none",
            name=name,
            architecture="x86_64",
        )
        self.failures: dict[str, deque[RuntimeFailure]] = {}
        self.hooks: dict[str, Callable[[], None]] = {}
        self.unreachable = False
        self.generation = 0  # bumped when streams must break (reset, unreachable)
        self.check_bind_sources = True
        self.streams_opened = 0  # event streams ever opened: tests wait for a watcher's
        self._last_ns = 0
        self._ports = itertools.count(32768)

    # -- time and logs ----------------------------------------------------------------------

    def stamp(self, at: float | None = None) -> int:
        """Nanoseconds, strictly increasing per daemon: entries and events never reorder."""
        ns = int((time.time() if at is None else at) * NS)
        self._last_ns = max(ns, self._last_ns + 1)
        return self._last_ns

    def write(
        self, container: _Container, data: bytes, at: float | None = None, *, stream: int = 1
    ) -> None:
        for line in data.splitlines(keepends=True):
            if not line.endswith(b"\n"):
                line += b"\n"
            ns = self.stamp(at)
            container.log.append((ns, line))
            if stream == 2:
                container.stderr_ns.add(ns)

    def emit(self, container: _Container, action: str, ns: int) -> None:
        self.events.append(
            {
                "id": container.id,
                "action": action,
                "time": _datetime(ns),
                "exit_code": container.exit_code if action == "die" else None,
                "name": container.name,
                "image": container.spec.image,
                "labels": dict(container.spec.labels),
            }
        )
        self.cond.notify_all()

    # -- the model's life cycle -------------------------------------------------------------

    def start(self, container: _Container) -> None:
        now = time.time()
        container.host_ports = self._bind(container)  # may fail: nothing changed yet
        container.status, container.exit_code, container.oom_killed = "running", None, False
        container.finished_at, container.handlers = None, {}
        ns = self.stamp(now)
        container.started_at = _datetime(ns)
        container.program = _program(self, container)
        container.wake_at = now
        self.emit(container, "start", ns)
        self.resume(container)

    def resume(self, container: _Container) -> None:
        """Run the program from its wake-up time until it sleeps again or ends."""
        at = container.wake_at if container.wake_at is not None else time.time()
        try:
            assert container.program is not None  # started: it has its program
            request = container.program.send(None)
        except StopIteration as stop:
            self.exit(container, stop.value or 0, at=at)
        except _Exit as done:
            self.exit(container, done.code, at=at)
        else:
            container.wake_at = None if request is None else at + request

    def exit(
        self, container: _Container, code: int, *, at: float | None = None, oom: bool = False
    ) -> None:
        if not container.running:
            return
        container.status, container.exit_code, container.oom_killed = "exited", code & 255, oom
        container.program, container.wake_at = None, None
        ns = self.stamp(at)
        container.finished_at = _datetime(ns)
        self.emit(container, "die", ns)

    def advance(self) -> None:
        """Wake every sleeping container whose time has come (in time order)."""
        now = time.time()
        while True:
            due = [
                c
                for c in self.containers.values()
                if c.running and c.wake_at is not None and c.wake_at <= now
            ]
            if not due:
                return
            self.resume(min(due, key=lambda c: c.wake_at or 0.0))  # (all set: filtered)

    def next_wake(self) -> float | None:
        wakes = [c.wake_at for c in self.containers.values() if c.running and c.wake_at]
        return min(wakes) if wakes else None

    def wait_a_little(self, deadline: float | None) -> None:
        """Block until something may have changed: a notify, a wake-up or ``deadline``."""
        now = time.time()
        bounds = [1.0]
        if deadline is not None:
            bounds.append(deadline - now)
        if (wake := self.next_wake()) is not None:
            bounds.append(wake - now)
        self.cond.wait(max(0.0, min(bounds)))

    def signal(self, container: _Container, signal_name: str) -> None:
        name = signal_name.upper().removeprefix("SIG")
        if name in ("KILL", "9"):
            self.exit(container, KILLED)
            return
        action = container.handlers.get(name)
        if not action:
            return  # PID 1 ignores signals it does not handle
        # The handler runs now (its output stamped now, not at the next wake-up); sleeps in
        # it take no time, and the main program then sleeps on as before.
        wake, container.wake_at = container.wake_at, None
        try:
            for request in _run_script(self, container, action):
                if request is None:
                    break  # a handler that never returns: the container goes on
        except _Exit as done:
            self.exit(container, done.code)
            return
        container.wake_at = wake

    def _bind(self, container: _Container) -> list[dict]:
        used = {
            p["hostPort"]
            for c in self.containers.values()
            if c.running and c is not container
            for p in c.host_ports
        }
        with _daemons_lock:
            outside = set(_ports_taken_outside)
        ports = []
        for mapping in container.spec.port_mappings:
            host_port = mapping.host_port
            if not host_port:  # Docker picks one, and picks again while its pick is taken
                host_port = next(self._ports)
                while host_port in used or host_port in outside:
                    host_port = next(self._ports)
            endpoint = (
                f"start: driver failed programming external connectivity on endpoint "
                f"{container.name}"
            )
            if host_port in used:
                raise HostPortBusy(
                    f"{endpoint}: Bind for 0.0.0.0:{host_port} failed: port is already allocated",
                    host_port=host_port,
                    status_code=500,
                )
            if host_port in outside:
                raise HostPortBusy(
                    f"{endpoint}: Error starting userland proxy: listen tcp4 0.0.0.0:"
                    f"{host_port}: bind: address already in use",
                    host_port=host_port,
                    status_code=500,
                )
            used.add(host_port)
            ports.append(
                {
                    "containerPort": int(str(mapping.container_port).split("/")[0]),
                    "hostPort": int(host_port),
                    "hostIp": mapping.host_ip or "0.0.0.0",
                }
            )
        return sorted(ports, key=lambda p: p["containerPort"])

    def find(self, ref: str, operation: str) -> _Container:
        found = self.containers.get(ref)
        if found is None:
            matches = [c for c in self.containers.values() if c.name == ref]
            matches = matches or [c for c in self.containers.values() if c.id.startswith(ref)]
            if len(matches) == 1:
                found = matches[0]
        if found is None:
            raise ContainerNotFound(f"{operation}: No such container: {ref}")
        return found


def _datetime(ns: int) -> datetime:
    return datetime.fromtimestamp(ns // NS, tz=UTC).replace(microsecond=(ns % NS) // 1000)


def _stamp_text(ns: int) -> bytes:
    whole = datetime.fromtimestamp(ns // NS, tz=UTC)
    return f"{whole:%Y-%m-%dT%H:%M:%S}.{ns % NS:09d}Z".encode()


def _normal(ref: str) -> str:
    """``name`` means ``name:latest``, as Docker reads it."""
    if "@" in ref:
        return ref
    last = ref.rsplit("/", 1)[-1]
    return ref if ":" in last else f"{ref}:latest"


def _seconds(value: datetime | float | int | None) -> float | None:
    if value is None:
        return None
    return value.timestamp() if isinstance(value, datetime) else float(value)


# --- the engine --------------------------------------------------------------------------


class MemoryEngine:
    """``protocol.Engine`` in memory; the extra methods after the protocol steer it."""

    def __init__(
        self,
        url: str,
        *,
        tls_ca: str | None = None,
        tls_cert: str | None = None,
        tls_key: str | None = None,
        timeout: float = 30.0,
        port_policy: PortPolicy | None = None,
    ):
        if bool(tls_cert) != bool(tls_key):
            raise RuntimeFailure("TLS needs both a client certificate and a key", permanent=True)
        self.url = url
        self.timeout = timeout
        self.port_policy = port_policy or PortPolicy()
        parsed = urlparse(url)
        self._own_sockets = (parsed.path,) if parsed.scheme == "unix" else ()
        self._daemon = daemon_for(url)
        self._closed = False

    def __repr__(self) -> str:
        return f"MemoryEngine({self.url!r})"

    def close(self) -> None:
        self._closed = True
        with self._daemon.cond:
            self._daemon.cond.notify_all()

    def __enter__(self) -> MemoryEngine:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _enter(self, operation: str) -> _Daemon:
        """The daemon, advanced to now, after any injected failure (called under its lock)."""
        daemon = self._daemon
        if daemon.unreachable:
            raise RuntimeFailure(
                f"{operation} on {self.url}: connection refused (engine unreachable)",
                permanent=False,
            )
        hook = daemon.hooks.pop(operation, None)
        if hook is not None:
            hook()
        for key in (operation, "*"):
            queue = daemon.failures.get(key)
            if queue:
                failure = queue[0]
                if getattr(failure, "times", 1) != -1:
                    queue.popleft()
                busy = host_port_busy(failure.message, status_code=failure.status_code)
                raise busy or RuntimeFailure(
                    failure.message, permanent=failure.permanent, status_code=failure.status_code
                )
        daemon.advance()
        return daemon

    # -- engine -----------------------------------------------------------------------------

    def info(self) -> EngineInfo:
        with self._daemon.cond:
            return self._enter("info").info

    def image_tags(self) -> list[str]:
        with self._daemon.cond:
            return sorted(i for i in self._enter("list images").images if "@" not in i)

    def image_present(self, ref: str) -> bool:
        with self._daemon.cond:
            return _normal(ref) in self._enter("inspect image").images

    def pull(
        self,
        repository: str,
        tag: str = "latest",
        *,
        username: str | None = None,
        password: str | None = None,
    ) -> None:
        secrets = (password, f"{username}:{password}" if username else None)
        pull_tag = tag or (None if "@" in repository else "latest")
        ref = f"{repository}:{pull_tag}" if pull_tag else repository
        shown = f"pull {ref}"
        with self._daemon.cond:
            daemon = self._enter("pull")
            host = repository.split("/", 1)[0] if "/" in repository else ""
            if host and _unreachable_registry(host):
                message = redact(
                    f'{shown}: Get "https://{host}/v2/": dial tcp {host}: connect: '
                    "connection refused",
                    secrets,
                )
                raise RuntimeFailure(message, permanent=True, status_code=500)
            if "no-such" in repository:
                message = redact(f"{shown}: manifest unknown: manifest unknown", secrets)
                raise RuntimeFailure(
                    message,
                    permanent=is_permanent(message, status_code=500, operation="pull"),
                    status_code=500,
                )
            daemon.images.add(_normal(ref))

    # -- containers -------------------------------------------------------------------------

    def run(self, spec: ContainerSpec) -> str:
        container_id = self.create(spec)
        with removed_on_failure(self, container_id):
            self.start(container_id)
        return container_id

    def create(self, spec: ContainerSpec) -> str:
        """Create without starting (steering: a launch that crashed between the two)."""
        check_spec(spec, extra_sockets=self._own_sockets, port_policy=self.port_policy)
        with self._daemon.cond:
            daemon = self._enter("create")
            if _normal(spec.image) not in daemon.images:
                raise RuntimeFailure(
                    f"create: No such image: {spec.image}", permanent=True, status_code=404
                )
            for mount in spec.binds:
                if daemon.check_bind_sources and not os.path.exists(mount.source):
                    raise RuntimeFailure(
                        'create: invalid mount config for type "bind": bind source path does '
                        f"not exist: {mount.source}",
                        permanent=True,
                        status_code=400,
                    )
            if spec.name and any(c.name == spec.name for c in daemon.containers.values()):
                raise RuntimeFailure(
                    f'create: Conflict. The container name "/{spec.name}" is already in use',
                    permanent=True,
                    status_code=409,
                )
            container_id = uuid.uuid4().hex + uuid.uuid4().hex
            name = spec.name or f"memory_{container_id[:12]}"
            container = _Container(id=container_id, name=name, spec=spec)
            for folder in spec.folders:  # as DockerEngine: made by create, before any start
                container.folder_make(folder)
            daemon.containers[container_id] = container
        return container_id

    def start(self, container_id: str) -> None:
        with self._daemon.cond:
            daemon = self._enter("start")
            container = daemon.find(container_id, "start")
            if container.running:
                return
            command = container.spec.command
            if command and command[0].rsplit("/", 1)[-1] not in APPLETS:
                raise RuntimeFailure(
                    f'start: failed to create task for container: exec: "{command[0]}": '
                    "executable file not found in $PATH: unknown",
                    permanent=True,
                    status_code=400,
                )
            daemon.start(container)

    def put_archive(self, container_id: str, path: str, tar_bytes) -> None:
        """Unpack the tar's folders and regular files (``container_files`` reads the files
        back); like Docker, ``path`` must be absolute and the tar valid."""
        data = tar_bytes if isinstance(tar_bytes, bytes) else tar_bytes.read()
        if not path.startswith("/"):
            raise RuntimeFailure(
                f"copy to: path {path!r} is not absolute", permanent=True, status_code=400
            )
        try:
            with tarfile.open(fileobj=io.BytesIO(data)) as archive:
                members = [
                    (m.name, f.read() if m.isfile() and (f := archive.extractfile(m)) else None)
                    for m in archive
                    if m.isfile() or m.isdir()
                ]
        except tarfile.TarError as exc:
            raise RuntimeFailure(f"copy to: {exc}", permanent=True, status_code=400) from None
        with self._daemon.cond:
            container = self._enter("copy to").find(container_id, "copy to")
            for name, content in members:
                target = posixpath.normpath(posixpath.join(path, name.lstrip("./")))
                if content is None:
                    container.folder_make(target)
                else:
                    container.folder_make(posixpath.dirname(target))
                    container.files[target] = content

    def container_files(self, container_id: str) -> dict[str, bytes]:
        """Steering: the files put into a container (path -> content)."""
        with self._daemon.cond:
            files = self._daemon.find(container_id, "copy to").files
            return {path: data for path, data in files.items() if data is not None}

    def inspect(self, container_id: str) -> ContainerState:
        with self._daemon.cond:
            return self._enter("inspect").find(container_id, "inspect").state()

    def list_by_labels(self, labels: Mapping[str, str]) -> list[ContainerState]:
        with self._daemon.cond:
            daemon = self._enter("list")
            return [
                c.state()
                for c in reversed(list(daemon.containers.values()))  # newest first, as Docker
                if all(c.spec.labels.get(k) == str(v) for k, v in labels.items())
            ]

    def find_by_label(self, key: str, value: str) -> list[ContainerState]:
        return self.list_by_labels({key: value})

    def signal(self, container_id: str, signal_name: str) -> None:
        with self._daemon.cond:
            daemon = self._enter("signal")
            container = daemon.find(container_id, "signal")
            if not container.running:
                raise ContainerNotRunning(
                    f"signal: Cannot kill container: {container_id}: "
                    f"Container {container.id} is not running"
                )
            daemon.signal(container, signal_name)

    def stop(self, container_id: str, *, timeout_s: int) -> None:
        with self._daemon.cond:
            daemon = self._enter("stop")
            container = daemon.find(container_id, "stop")
            if not container.running:
                return
            daemon.signal(container, "TERM")
            deadline = time.time() + max(0, timeout_s)
            while container.running and time.time() < deadline:
                daemon.wait_a_little(deadline)
                daemon.advance()
            daemon.exit(container, KILLED)

    def kill(self, container_id: str) -> None:
        try:
            self.signal(container_id, "SIGKILL")
        except ContainerNotRunning:
            pass

    def wait(self, container_id: str, *, timeout_s: float) -> int:
        with self._daemon.cond:
            daemon = self._enter("wait")
            container = daemon.find(container_id, "wait")
            deadline = time.time() + timeout_s
            while container.running:
                if time.time() >= deadline:
                    raise RuntimeFailure(
                        f"wait on {self.url}: read timed out after {timeout_s} s",
                        permanent=False,
                    )
                daemon.wait_a_little(deadline)
                daemon.advance()
            return container.exit_code if container.exit_code is not None else 0

    def remove(self, container_id: str, *, force: bool = True) -> None:
        with self._daemon.cond:
            daemon = self._enter("remove")
            try:
                container = daemon.find(container_id, "remove")
            except ContainerNotFound:
                return
            if container.running:
                if not force:
                    raise RuntimeFailure(
                        f"remove: You cannot remove a running container {container.id}. "
                        "Stop the container before attempting removal or force remove",
                        permanent=True,
                        status_code=409,
                    )
                daemon.exit(container, KILLED)
            del daemon.containers[container.id]

    def logs(
        self, container_id: str, *, since: float | None = None, timestamps: bool = False
    ) -> bytes:
        with self._daemon.cond:
            container = self._enter("logs").find(container_id, "logs")
            floor = int(since * NS) if since and since > 0 else 0
            return b"".join(
                (_stamp_text(ns) + b" " + line) if timestamps else line
                for ns, line in container.log
                if ns >= floor
            )

    def log_frames(
        self, container_id: str, *, since: float | None = None, timestamps: bool = False
    ) -> list[tuple[int, bytes]]:
        with self._daemon.cond:
            container = self._enter("logs").find(container_id, "logs")
            floor = int(since * NS) if since and since > 0 else 0
            return [
                (
                    2 if ns in container.stderr_ns else 1,
                    (_stamp_text(ns) + b" " + line) if timestamps else line,
                )
                for ns, line in container.log
                if ns >= floor
            ]

    def stats(self, container_id: str) -> ContainerStats:
        with self._daemon.cond:
            container = self._enter("stats").find(container_id, "stats")
            # As Docker: a stopped container reads as all zeros.
            return container.stats if container.running else ContainerStats(0, 0, None, 0, 0)

    def events(
        self,
        *,
        since: datetime | float | None = None,
        until: datetime | float | None = None,
        filters: Mapping[str, object] | None = None,
    ) -> Iterator[dict]:
        with self._daemon.cond:
            daemon = self._enter("events")
            generation = daemon.generation
            daemon.streams_opened += 1
            # Like Docker: past events from ``since`` on; without it, only what comes next.
            cursor = 0 if since is not None else len(daemon.events)
        floor, end = _seconds(since), _seconds(until)
        wanted = _event_filter(filters or {})
        return self._event_stream(daemon, generation, cursor, floor, end, wanted)

    def _event_stream(self, daemon, generation, cursor, floor, end, wanted) -> Iterator[dict]:
        while True:
            with daemon.cond:
                if daemon.generation != generation or daemon.unreachable or self._closed:
                    raise RuntimeFailure(f"event stream of {self.url} ended", permanent=False)
                daemon.advance()
                ready = daemon.events[cursor:]
                cursor = len(daemon.events)
                if not ready:
                    if end is not None and time.time() >= end:
                        return
                    daemon.wait_a_little(end)
            for event in ready:
                seconds = event["time"].timestamp()
                if floor is not None and seconds < floor:
                    continue
                if end is not None and seconds > end:
                    return
                if wanted(event):
                    yield dict(event, labels=dict(event["labels"]))

    # -- steering (tests and demos; not part of the protocol) -------------------------------

    def finish(self, container_id: str, exit_code: int = 0, *, oom_killed: bool = False) -> None:
        """The container's process ends now with ``exit_code`` (as if OOM-killed when asked)."""
        with self._daemon.cond:
            daemon = self._daemon
            container = daemon.find(container_id, "finish")
            if not container.running:
                raise ContainerNotRunning(f"finish: container {container_id} is not running")
            daemon.exit(container, exit_code, oom=oom_killed)

    def get_archive(self, container_id: str, path: str) -> Iterator[bytes]:
        """A tar of ``path`` and what lies below it, named from its basename as Docker does."""
        with self._daemon.cond:
            container = self._enter("copy from").find(container_id, "copy from")
            path = posixpath.normpath(path)
            if path not in container.files:
                raise RuntimeFailure(
                    f"copy from: Could not find the file {path} in container {container_id}",
                    permanent=True,
                    status_code=404,
                )
            below = sorted(p for p in container.files if p == path or p.startswith(path + "/"))
            entries = [(p, container.files[p]) for p in below]
        base = posixpath.dirname(path)
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
            for name, data in entries:
                info = tarfile.TarInfo(posixpath.relpath(name, base))
                info.mtime = int(time.time())
                if data is None:
                    info.type, info.mode = tarfile.DIRTYPE, 0o755
                    tar.addfile(info)
                else:
                    info.size, info.mode = len(data), 0o644
                    tar.addfile(info, io.BytesIO(data))
        data = buffer.getvalue()
        return iter([data[i : i + 65536] for i in range(0, len(data), 65536)])

    def write_file(self, container_id: str, path: str, data: bytes | str) -> None:
        """Steering: the container writes ``data`` to ``path`` (its folders made too)."""
        with self._daemon.cond:
            container = self._daemon.find(container_id, "write_file")
            container.folder_make(posixpath.dirname(path))
            container.files[posixpath.normpath(path)] = (
                data.encode() if isinstance(data, str) else data
            )

    def set_stats(self, container_id: str, **fields) -> None:
        """What the next ``stats`` readings of the container say (counters are cumulative)."""
        from dataclasses import replace

        with self._daemon.cond:
            container = self._daemon.find(container_id, "set_stats")
            container.stats = replace(container.stats, **fields)

    def write_log(self, container_id: str, data: bytes | str, *, stream: int = 1) -> None:
        """Append to the container's log (``stream`` 2: stderr)."""
        with self._daemon.cond:
            container = self._daemon.find(container_id, "write_log")
            data = data.encode() if isinstance(data, str) else data
            self._daemon.write(container, data, stream=stream)

    def fail_next(
        self,
        operation: str,
        *,
        permanent: bool = False,
        message: str | None = None,
        times: int = 1,
        status_code: int | None = None,
    ) -> None:
        """The next ``times`` calls of ``operation`` ("run" is "create"; "*" is any call)
        raise RuntimeFailure; ``times=-1``: every call until ``clear_failures``."""
        operation = {"run": "create"}.get(operation, operation)
        kind = "permanent" if permanent else "transient"
        failure = RuntimeFailure(
            message or f"{operation}: injected {kind} failure",
            permanent=permanent,
            status_code=status_code,
        )
        failure.times = times  # type: ignore[attr-defined]  # this engine's mark, read below
        with self._daemon.cond:
            queue = self._daemon.failures.setdefault(operation, deque())
            queue.extend([failure] * (1 if times == -1 else times))

    def before_next(self, operation: str, hook: Callable[[], None]) -> None:
        """Call ``hook`` once, right before the next ``operation`` ("run" is "create"): lets
        a test change the world in the middle of a service (a cancel during a launch)."""
        with self._daemon.cond:
            self._daemon.hooks[{"run": "create"}.get(operation, operation)] = hook

    def clear_failures(self) -> None:
        with self._daemon.cond:
            self._daemon.failures.clear()

    def set_unreachable(self, unreachable: bool = True) -> None:
        """Every call fails as an unreachable daemon's would (transient); streams end."""
        with self._daemon.cond:
            self._daemon.unreachable = unreachable
            if unreachable:
                self._daemon.generation += 1
            self._daemon.cond.notify_all()

    def streams_opened(self) -> int:
        """How many event streams clients have opened on this daemon so far."""
        with self._daemon.cond:
            return self._daemon.streams_opened

    def add_image(self, ref: str) -> None:
        with self._daemon.cond:
            self._daemon.images.add(_normal(ref))

    def set_info(self, **fields) -> None:
        from dataclasses import replace

        with self._daemon.cond:
            self._daemon.info = replace(self._daemon.info, **fields)


def _unreachable_registry(host: str) -> bool:
    name = host.rsplit(":", 1)[0].strip("[]") if host.count(":") <= 1 else host.strip("[]")
    if name == "localhost":
        return True
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def _event_filter(filters: Mapping[str, object]):
    def values(key):
        value = filters.get(key)
        if value is None:
            return []
        return [value] if isinstance(value, str) else list(cast(Iterable[str], value))

    labels = values("label")
    actions = values("event")
    containers = values("container")

    def wanted(event: dict) -> bool:
        if actions and event["action"] not in actions:
            return False
        if containers and not any(
            event["id"].startswith(c) or event["name"] == c for c in containers
        ):
            return False
        for item in labels:
            key, sep, value = str(item).partition("=")
            if key not in event["labels"] or (sep and event["labels"][key] != value):
                return False
        return True

    return wanted


# --- the model shell ---------------------------------------------------------------------


@dataclass
class _Word:
    parts: list[tuple[str, bool]]  # (text, expand $VARs)

    def literal(self) -> str | None:
        if len(self.parts) == 1 and self.parts[0][1]:
            return self.parts[0][0]
        return None


_OPERATORS = ("&&", "||", ";", "|", "&", ">>", ">&", ">", "<")


def _tokens(script: str) -> list[_Word | str]:
    tokens: list[_Word | str] = []
    parts: list[tuple[str, bool]] | None = None
    raw = ""
    i, n = 0, len(script)

    def flush():
        nonlocal parts, raw
        if raw:
            parts = (parts or []) + [(raw, True)]
            raw = ""
        if parts is not None:
            tokens.append(_Word(parts))
        parts = None

    while i < n:
        ch = script[i]
        if ch in " \t":
            flush()
            i += 1
        elif ch == "\n":
            flush()
            tokens.append(";")
            i += 1
        elif ch == "#" and parts is None and not raw:
            while i < n and script[i] != "\n":
                i += 1
        elif ch == "'":
            end = script.find("'", i + 1)
            end = n if end < 0 else end
            if raw:
                parts = (parts or []) + [(raw, True)]
                raw = ""
            parts = (parts or []) + [(script[i + 1 : end], False)]
            i = end + 1
        elif ch == '"':
            i += 1
            text = ""
            while i < n and script[i] != '"':
                if script[i] == "\\" and i + 1 < n and script[i + 1] in '"\\$`':
                    i += 1
                text += script[i]
                i += 1
            i += 1
            raw += text
        elif ch == "\\" and i + 1 < n:
            if raw:
                parts = (parts or []) + [(raw, True)]
                raw = ""
            parts = (parts or []) + [(script[i + 1], False)]
            i += 2
        elif ch in "()":
            flush()
            tokens.append(ch)
            i += 1
        elif ch in ";&|<>":
            if ch == ">" and parts is None and raw in ("1", "2"):
                prefix, raw = raw, ""
            else:
                prefix = ""
                flush()
            for op in _OPERATORS:
                if script.startswith(op, i):
                    tokens.append(prefix + op)
                    i += len(op)
                    break
        else:
            raw += ch
            i += 1
    flush()
    return tokens


@dataclass
class _Simple:
    words: list[_Word]
    stdout: str | tuple = "out"  # out | err | null | ("file", word, append)
    stderr: str = "err"


@dataclass
class _Loop:
    kind: str  # while | until | for
    condition: list  # a list of and-or lists (while/until)
    body: list
    variable: str = ""
    items: list[_Word] = field(default_factory=list)


@dataclass
class _If:
    branches: list[tuple[list, list]]
    otherwise: list | None


class _Parser:
    def __init__(self, tokens):
        self.tokens, self.i = tokens, 0

    def peek(self):
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def keyword(self):
        token = self.peek()
        return token.literal() if isinstance(token, _Word) else None

    def take(self):
        token = self.peek()
        self.i += 1
        return token

    def expect(self, word: str):
        if self.keyword() != word:
            raise ValueError(f"syntax error: expected {word}")
        self.i += 1

    def sequence(self, stop=()) -> list:
        items: list[list] = []
        while True:
            while self.peek() in (";", "&"):
                self.i += 1
            if self.peek() is None or self.keyword() in stop:
                return items
            items.append(self.and_or())

    def and_or(self) -> list:
        chain = [(None, self.pipeline())]
        while self.peek() in ("&&", "||"):
            op = self.take()
            chain.append((op, self.pipeline()))
        return chain

    def pipeline(self) -> list:
        commands = [self.command()]
        while self.peek() == "|":
            self.i += 1
            commands.append(self.command())
        return commands

    def command(self):
        word = self.keyword()
        if word in ("while", "until"):
            self.i += 1
            condition = self.sequence(stop=("do",))
            self.expect("do")
            body = self.sequence(stop=("done",))
            self.expect("done")
            return _Loop(word, condition, body)
        if word == "for":
            self.i += 1
            variable = self.take().literal() or ""
            items = []
            if self.keyword() == "in":
                self.i += 1
                while isinstance(self.peek(), _Word) and self.keyword() != "do":
                    items.append(self.take())
            while self.peek() == ";":
                self.i += 1
            self.expect("do")
            body = self.sequence(stop=("done",))
            self.expect("done")
            return _Loop("for", [], body, variable, items)
        if word == "if":
            self.i += 1
            branches, otherwise = [], None
            while True:
                condition = self.sequence(stop=("then",))
                self.expect("then")
                body = self.sequence(stop=("elif", "else", "fi"))
                branches.append((condition, body))
                if self.keyword() == "elif":
                    self.i += 1
                    continue
                if self.keyword() == "else":
                    self.i += 1
                    otherwise = self.sequence(stop=("fi",))
                self.expect("fi")
                return _If(branches, otherwise)
        command = _Simple([])
        while (token := self.peek()) is not None and token not in ("&&", "||", ";", "|", "&"):
            if token in ("(", ")"):
                raise ValueError("syntax error: subshells are not modelled")
            self.i += 1
            if isinstance(token, _Word):
                command.words.append(token)
                continue
            target = self.take()
            target_text = target.literal() if isinstance(target, _Word) else ""
            if token == ">&" or token == "1>&":
                command.stdout = "err" if target_text == "2" else "out"
            elif token == "2>&":
                command.stderr = "out" if target_text == "1" else "err"
            elif token.startswith("2"):
                command.stderr = "null"
            elif token.startswith(("1", ">")):
                append = token.endswith(">>")
                if isinstance(target, _Word) and target_text != "/dev/null":
                    command.stdout = ("file", target, append)
                else:
                    command.stdout = "null"
        return command


class _Shell:
    """One run of a script inside a container: variables, output, handlers."""

    def __init__(self, daemon: _Daemon, container: _Container):
        self.daemon, self.container = daemon, container
        self.variables = {
            "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "HOSTNAME": container.id[:12],
            "HOME": "/root",
            **container.spec.environment,
        }

    def expand(self, word: _Word) -> str:
        out = ""
        for text, expand in word.parts:
            out += self._expand(text) if expand else text
        return out

    def _expand(self, text: str) -> str:
        out, i = "", 0
        while i < len(text):
            if text[i] != "$" or i + 1 == len(text):
                out += text[i]
                i += 1
                continue
            if text[i + 1] == "?":
                out += str(self.container.last_status)
                i += 2
                continue
            if text[i + 1] == "{":
                end = text.find("}", i)
                name, i = text[i + 2 : end], end + 1
            else:
                j = i + 1
                while j < len(text) and (text[j].isalnum() or text[j] == "_"):
                    j += 1
                name, i = text[i + 1 : j], j
                if not name:
                    out += "$"
                    continue
            out += self.variables.get(name, "")
        return out

    def emit(self, data: str, stream: str, sink: list | None) -> None:
        if stream == "null" or not data:
            return
        if sink is not None and stream == "out":
            sink.append(data)
        else:
            wake = self.container.wake_at
            self.daemon.write(
                self.container, data.encode(), at=wake, stream=2 if stream == "err" else 1
            )

    # -- execution (generators: they yield seconds to sleep, or None for "forever") --------

    def sequence(self, items, sink=None):
        status = 0
        for chain in items:
            status = yield from self.and_or(chain, sink)
        return status

    def and_or(self, chain, sink):
        status = 0
        for op, pipeline in chain:
            if (op == "&&" and status != 0) or (op == "||" and status == 0):
                continue
            status = yield from self.pipeline(pipeline, sink)
            self.container.last_status = status
        return status

    def pipeline(self, commands, sink):
        if len(commands) == 1:
            return (yield from self.command(commands[0], sink, None))
        data: str | None = None
        status = 0
        for position, command in enumerate(commands):
            last = position == len(commands) - 1
            captured: list[str] = []
            status = yield from self.command(command, sink if last else captured, data)
            data = "".join(captured)
        return status

    def command(self, command, sink, stdin):
        if isinstance(command, _Loop):
            return (yield from self.loop(command, sink))
        if isinstance(command, _If):
            for condition, body in command.branches:
                if (yield from self.sequence(condition, sink)) == 0:
                    return (yield from self.sequence(body, sink))
            if command.otherwise is not None:
                return (yield from self.sequence(command.otherwise, sink))
            return 0
        argv = [self.expand(word) for word in command.words]
        if not argv:
            return 0
        if "=" in argv[0] and argv[0].split("=")[0].isidentifier() and len(argv) == 1:
            name, _, value = argv[0].partition("=")
            self.variables[name] = value
            return 0
        stdout = sink if command.stdout == "out" else None
        out_stream = "err" if command.stdout == "err" else command.stdout
        if isinstance(command.stdout, tuple):  # > FILE, >> FILE
            _, word, append = command.stdout
            path = self.expand(word)
            if not path.startswith("/"):
                path = posixpath.join(self.container.spec.working_dir or "/", path)
            if not self.container.file_write(path, b"", append=True):
                self.emit(f"sh: can't create {path}: nonexistent directory\n", "err", None)
                return 1
            if not append:
                self.container.files[posixpath.normpath(path)] = b""

            def to_file(text):
                self.container.file_write(path, text.encode(), append=True)

            return (
                yield from self.builtin(
                    argv, to_file, lambda text: self.emit(text, "err", None), stdin
                )
            )

        def out(text):
            self.emit(text, out_stream, stdout)

        def err(text):
            self.emit(text, "out" if command.stderr == "out" else command.stderr, None)

        return (yield from self.builtin(argv, out, err, stdin))

    def loop(self, loop: _Loop, sink):
        if loop.kind == "for":
            status = 0
            for item in loop.items:
                self.variables[loop.variable] = self.expand(item)
                status = yield from self.sequence(loop.body, sink)
            return status
        if loop.kind == "while" and _only_sleeps(loop.body) and _always_true(loop.condition):
            yield None  # "while true; do sleep 1; done": nothing happens until a signal
            return 0
        status = 0
        while True:
            result = yield from self.sequence(loop.condition, sink)
            if (result == 0) != (loop.kind == "while"):
                return status
            status = yield from self.sequence(loop.body, sink)

    def builtin(self, argv, out, err, stdin):
        name, args = argv[0].rsplit("/", 1)[-1], argv[1:]
        spec = self.container.spec
        if name in ("true", ":"):
            return 0
        if name == "false":
            return 1
        if name == "exit":
            raise _Exit(int(args[0]) if args else self.container.last_status)
        if name == "echo":
            newline = "\n"
            if args and args[0] == "-n":
                args, newline = args[1:], ""
            out(" ".join(args) + newline)
            return 0
        if name == "sleep":
            seconds = args[0] if args else "0"
            if seconds in ("inf", "infinity"):
                yield None
            else:
                yield float(seconds.rstrip("s"))
            return 0
        if name == "trap":
            action, signals = (args[0], args[1:]) if args else ("", [])
            for signal_name in signals:
                key = signal_name.upper().removeprefix("SIG")
                if action in ("", "-"):
                    self.container.handlers.pop(key, None)
                else:
                    self.container.handlers[key] = action
            return 0
        if name in ("env", "printenv"):
            out("".join(f"{k}={v}\n" for k, v in self.variables.items()))
            return 0
        if name == "pwd":
            out((spec.working_dir or "/") + "\n")
            return 0
        if name == "id":
            out(f"{(spec.user or '0').split(':')[0] if '-u' in args else 'uid=0(root)'}\n")
            return 0
        if name == "nproc":
            out(f"{_cpu_count(spec.cpuset_cpus) or self.daemon.info.cpus}\n")
            return 0
        if name == "sort":
            out("".join(sorted((stdin or "").splitlines(keepends=True))))
            return 0
        if name in ("cat", "tail", "head", "tr", "tee"):
            if stdin is not None and (name != "cat" or not args):
                out(stdin)
                return 0
            if name == "cat" and args:
                err(f"cat: can't open '{args[0]}': No such file or directory\n")
                return 1
            return 0
        if name == "mkdir":
            for folder in (a for a in args if not a.startswith("-")):
                if not folder.startswith("/"):
                    folder = posixpath.join(spec.working_dir or "/", folder)
                self.container.folder_make(folder)
            return 0
        if name in _SERVERS:
            yield None
            return 0
        if name in APPLETS:
            return 0
        err(f"sh: {name}: not found\n")
        return 127


def _cpu_count(cpuset: str | None) -> int:
    if not cpuset:
        return 0
    count = 0
    for part in cpuset.split(","):
        low, _, high = part.partition("-")
        count += int(high or low) - int(low) + 1
    return count


def _only_sleeps(items) -> bool:
    for chain in items:
        for _, pipeline in chain:
            for command in pipeline:
                if not isinstance(command, _Simple) or not command.words:
                    return False
                if command.words[0].literal() not in ("sleep", "true", ":"):
                    return False
    return True


def _always_true(items) -> bool:
    if len(items) != 1 or len(items[0]) != 1 or len(items[0][0][1]) != 1:
        return False
    (command,) = items[0][0][1]
    return isinstance(command, _Simple) and [w.literal() for w in command.words] in (
        ["true"],
        [":"],
    )


def _parse(script: str) -> list:
    return _Parser(_tokens(script)).sequence()


def _run_script(daemon: _Daemon, container: _Container, script: str):
    shell = _Shell(daemon, container)
    try:
        items = _parse(script)
    except ValueError as error:
        shell.emit(f"sh: {error}\n", "err", None)
        raise _Exit(2) from None
    return shell.sequence(items)


def _program(daemon: _Daemon, container: _Container):
    """The container's main process, as a generator the daemon drives."""
    command = container.spec.command
    if not command:
        return  # the image's CMD: sh without stdin exits at once
    name = command[0].rsplit("/", 1)[-1]
    if name in ("sh", "ash", "bash") and len(command) >= 3 and command[1] == "-c":
        return (yield from _run_script(daemon, container, command[2]))
    shell = _Shell(daemon, container)
    words = [_Word([(word, False)]) for word in command]
    return (yield from shell.command(_Simple(words), None, None))


def is_memory_url(url: str) -> bool:
    return urlparse(url).scheme == "memory"
