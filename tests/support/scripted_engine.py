"""The fast tests' engine: the ``clusters.runtime.protocol.Engine`` calls in memory, each
container playing a behaviour the test stated. Not part of the product: a test selects it with
the ``scripted_engines`` fixture (tests/conftest.py), which points
``settings.PORTAL_ENGINE_CLASS`` here.

Nothing is interpreted. A test states a table keyed by command (the container's argv; a string
key is split into words as job documents are, ``clusters.runtime.commands.split_command``):

    scripted_engines.script({
        "sh -c 'echo hello; sleep 300'": Behaviour(output=["hello"], runs_for=300),
        HALTABLE: Behaviour(runs_for=None, on_signal={"USR1": Reaction(["saw-usr1"], exit_code=123)}),
    })

A ``Behaviour`` says what the process writes (stdout or stderr lines, each at a time after the
start; ``$VAR`` and ``${VAR}`` are the container's environment, ``ENVIRONMENT`` all of it as
``env | sort`` prints it), the files it writes when it starts (a job's outputs), when it exits
on its own and with which code, and what it does on each signal. A container whose command the
table lacks fails loudly: ``create`` raises ``UnscriptedCommand`` naming the argv, and the
fixture fails the test even where the product caught the error.

What the product observes of an engine is kept: one daemon per URL shared by every client of
that URL; containers with names, labels, created/running/exited states, exit codes, OOM flags;
logs with nanosecond stamps and their stream; published ports (Docker's picks, fixed ones, a
port taken by another container or outside the engine: ``HostPortBusy``); start/die events;
files put in and read back as tar; ``check_spec`` before every create, as DockerEngine does.
Signals are PID 1's: one the behaviour does not handle is ignored, SIGKILL always ends it with
137, ``stop`` sends SIGTERM and kills after the timeout. Time is real: a container's scheduled
output and exit happen when their time has come, seen by whichever call looks next.

Tests steer it with ``finish`` (an exit now, OOM-killed if asked), ``write_log``,
``write_file``, ``set_stats``, ``fail_next`` (the next calls of an operation raise a permanent
or transient RuntimeFailure; HostPortBusy when its message says a port is taken, as Docker's
would), ``before_next`` (a hook right before an operation), ``set_unreachable``, ``add_image``
and ``set_info``; the world (``WORLD``, the fixture's value) holds the table, the registry a
pull finds images in (``registry_add``) and host ports held outside every engine
(``host_port_occupy``).
"""

from __future__ import annotations

import io
import itertools
import os
import posixpath
import shlex
import tarfile
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from string import Template
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
TEST_IMAGE = "gpuportal/busybox:latest"
IMAGE_CMD = ("sh",)  # the test image's CMD: what runs when a spec has no command
BASE_ENVIRONMENT = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}


# --- the table ------------------------------------------------------------------------------


class UnscriptedCommand(AssertionError):
    """A container was asked to run a command the test's table does not state."""


@dataclass(frozen=True)
class Line:
    """One line the process writes: on stdout (1) or stderr (2), ``at`` seconds after it
    started (or after its signal handler began)."""

    text: str
    stream: int = 1
    at: float = 0.0


def out(text: str, *, at: float = 0.0) -> Line:
    return Line(text, 1, at)


def err(text: str, *, at: float = 0.0) -> Line:
    return Line(text, 2, at)


# A line that stands for the whole environment, one VAR=value per line, sorted (``env | sort``).
ENVIRONMENT = Line("\0environment")

Output = Sequence[str | Line]


@dataclass(frozen=True)
class Reaction:
    """What the process does with a signal: after ``delay`` seconds it writes ``output`` and,
    unless ``exit_code`` is None, exits with it (else it goes on as before)."""

    output: Output = ()
    exit_code: int | None = None
    delay: float = 0.0


@dataclass(frozen=True)
class Behaviour:
    """One command's process. ``runs_for``: seconds until it exits on its own with
    ``exit_code`` (0: at once, after its output at 0 s); None: it runs until a signal ends it.
    ``files``: path -> content written at the start (folders made; ``$VAR`` expanded in the
    path and in text content, bytes written as they are).
    ``on_signal``: "TERM", "USR1", ... -> Reaction; any other signal is ignored, as PID 1
    ignores signals it has no handler for, and SIGKILL cannot be handled. ``not_found``: no
    such executable in the image, the start fails as Docker's does."""

    output: Output = ()
    exit_code: int = 0
    runs_for: float | None = 0.0
    on_signal: Mapping[str, Reaction] = field(default_factory=dict)
    files: Mapping[str, str | bytes] = field(default_factory=dict)
    not_found: bool = False

    def __post_init__(self):
        ends = self.runs_for
        late = [line for line in _lines(self.output) if ends is not None and line.at > ends]
        if late:
            raise ValueError(f"output after the exit at {self.runs_for} s: {late}")
        if any(_signal_key(name) == "KILL" for name in self.on_signal):
            raise ValueError("SIGKILL cannot be handled: it always ends the process with 137")


def command_key(command: str | Sequence[str] | None) -> tuple[str, ...]:
    """The argv a table key stands for: a string is split as a POSIX shell (and the job
    document's command) would; None is the image's CMD."""
    if command is None:
        return IMAGE_CMD
    return tuple(shlex.split(command)) if isinstance(command, str) else tuple(command)


def _lines(output: Output) -> list[Line]:
    return [Line(item) if isinstance(item, str) else item for item in output]


def _signal_key(name: str) -> str:
    return name.upper().removeprefix("SIG")


class _Environment(dict):
    def __missing__(self, key):  # an unset variable expands to nothing, as in sh
        return ""


# --- the world: every daemon of the process, the table, the registry, the host ---------------


class ScriptedWorld:
    def __init__(self):
        self.lock = threading.Lock()
        self.daemons: dict[str, _Daemon] = {}
        self.commands: dict[tuple[str, ...], Behaviour] = {}
        self.unscripted: list[tuple[str, ...]] = []
        self.registry: set[str] = set()  # images a pull finds
        self.ports_taken_outside: set[int] = set()  # another process on the slave's machine

    def script(self, table: Mapping[str | tuple[str, ...], Behaviour]) -> ScriptedWorld:
        """State (or restate) commands and their behaviour."""
        with self.lock:
            for command, behaviour in table.items():
                self.commands[command_key(command)] = behaviour
        return self

    def behaviour(self, argv: tuple[str, ...]) -> Behaviour:
        with self.lock:
            found = self.commands.get(argv)
            if found is None:
                self.unscripted.append(argv)
        if found is None:
            raise UnscriptedCommand(
                f"no behaviour stated for the command {list(argv)!r}: add it to the test's "
                "table (scripted_engines.script)"
            )
        return found

    def registry_add(self, ref: str) -> None:
        with self.lock:
            self.registry.add(_normal(ref))

    def host_port_occupy(self, port: int) -> None:
        """Take ``port`` on the host, outside every engine, until ``host_port_release``."""
        with self.lock:
            self.ports_taken_outside.add(int(port))

    def host_port_release(self, port: int) -> None:
        with self.lock:
            self.ports_taken_outside.discard(int(port))

    def daemon(self, url: str) -> _Daemon:
        with self.lock:
            daemon = self.daemons.get(url)
            if daemon is None:
                daemon = self.daemons[url] = _Daemon(self, url)
            return daemon

    def streams_end(self) -> None:
        """Every open event stream ends (a transient failure), as when a daemon restarts."""
        with self.lock:
            daemons = list(self.daemons.values())
        for daemon in daemons:
            with daemon.cond:
                daemon.generation += 1
                daemon.cond.notify_all()

    def reset(self) -> None:
        """Forget every daemon, the table and the registry; open event streams end."""
        self.streams_end()
        with self.lock:
            self.daemons.clear()
            self.commands.clear()
            self.unscripted.clear()
            self.registry.clear()
            self.ports_taken_outside.clear()


WORLD = ScriptedWorld()


# --- containers and daemons ------------------------------------------------------------------


@dataclass
class _Container:
    id: str
    name: str
    spec: ContainerSpec
    behaviour: Behaviour
    status: str = "created"  # created | running | exited
    exit_code: int | None = None
    oom_killed: bool = False
    started_at: datetime | None = None
    finished_at: datetime | None = None
    log: list[tuple[int, int, bytes]] = field(default_factory=list)  # (ns, stream, one line)
    host_ports: list[dict] = field(default_factory=list)
    # What the process does next: (seconds since the epoch, order, line to write or exit code).
    pending: list[tuple[float, int, Line | int]] = field(default_factory=list)
    # The container's files: absolute path -> bytes, None for a folder.
    files: dict[str, bytes | None] = field(default_factory=dict)
    stats: ContainerStats = field(default_factory=lambda: ContainerStats(0, 0, None, 0, 0))

    @property
    def running(self) -> bool:
        return self.status == "running"

    def environment(self) -> _Environment:
        return _Environment(
            {
                **BASE_ENVIRONMENT,
                "HOSTNAME": self.id[:12],
                "HOME": "/root",
                **self.spec.environment,
            }
        )

    def expand(self, text: str) -> str:
        return Template(text).safe_substitute(
            _Environment(self.environment(), PWD=self.spec.working_dir or "/")
        )

    def folder_make(self, path: str) -> None:
        parts = posixpath.normpath(path).strip("/").split("/")
        for depth in range(1, len(parts) + 1):
            self.files.setdefault("/" + "/".join(parts[:depth]), None)

    def file_write(self, path: str, data: bytes) -> None:
        path = posixpath.normpath(path)
        self.folder_make(posixpath.dirname(path))
        self.files[path] = data

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
    """The shared state behind every ScriptedEngine of one URL."""

    def __init__(self, world: ScriptedWorld, url: str):
        self.world = world
        self.url = url
        self.cond = threading.Condition(threading.RLock())
        self.containers: dict[str, _Container] = {}
        self.events: list[dict] = []
        self.images: set[str] = {TEST_IMAGE}
        name = urlparse(url).netloc or urlparse(url).path.rsplit("/", 1)[-1] or "scripted"
        self.info = EngineInfo(
            cpus=16,
            memory_bytes=64 * 1024**3,
            server_version="scripted",
            runtimes=("runc",),
            os="scripted engine (tests/support)",
            kernel="none",
            name=name,
            architecture="x86_64",
        )
        self.failures: dict[str, deque[RuntimeFailure]] = {}
        self.hooks: dict[str, Callable[[], None]] = {}
        self.unreachable = False
        self.generation = 0  # bumped when streams must break (reset, unreachable)
        self.streams_opened = 0  # event streams ever opened: tests wait for a watcher's
        self._last_ns = 0
        self._order = itertools.count()
        self._ports = itertools.count(32768)

    def stamp(self, at: float | None = None) -> int:
        """Nanoseconds, strictly increasing per daemon: entries and events never reorder."""
        ns = int((time.time() if at is None else at) * NS)
        self._last_ns = max(ns, self._last_ns + 1)
        return self._last_ns

    def write(self, container: _Container, line: Line, at: float | None = None) -> None:
        if line == ENVIRONMENT:
            text = "".join(f"{k}={v}\n" for k, v in sorted(container.environment().items()))
        else:
            text = container.expand(line.text) + "\n"
        for part in text.splitlines(keepends=True):
            container.log.append((self.stamp(at), line.stream, part.encode()))

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

    def schedule(self, container: _Container, at: float, what: Line | int) -> None:
        container.pending.append((at, next(self._order), what))

    def start(self, container: _Container) -> None:
        now = time.time()
        container.host_ports = self._bind(container)  # may fail: nothing changed yet
        container.status, container.exit_code, container.oom_killed = "running", None, False
        container.finished_at, container.pending = None, []
        ns = self.stamp(now)
        container.started_at = _datetime(ns)
        self.emit(container, "start", ns)
        behaviour = container.behaviour
        for path, content in behaviour.files.items():
            data = container.expand(content).encode() if isinstance(content, str) else content
            container.file_write(container.expand(path), data)
        for line in _lines(behaviour.output):
            self.schedule(container, now + line.at, line)
        if behaviour.runs_for is not None:
            self.schedule(container, now + behaviour.runs_for, behaviour.exit_code)
        self.advance()

    def exit(
        self, container: _Container, code: int, *, at: float | None = None, oom: bool = False
    ) -> None:
        if not container.running:
            return
        container.status, container.exit_code, container.oom_killed = "exited", code & 255, oom
        container.pending = []
        ns = self.stamp(at)
        container.finished_at = _datetime(ns)
        self.emit(container, "die", ns)

    def advance(self) -> None:
        """Play every container's due output and exits, in time order."""
        now = time.time()
        while True:
            due = [
                (entry, c)
                for c in self.containers.values()
                if c.running
                for entry in c.pending
                if entry[0] <= now
            ]
            if not due:
                return
            entry, container = min(due, key=lambda item: item[0][:2])
            container.pending.remove(entry)
            at, _, what = entry
            if isinstance(what, Line):
                self.write(container, what, at)
            else:
                self.exit(container, what, at=at)

    def next_due(self) -> float | None:
        times = [e[0] for c in self.containers.values() if c.running for e in c.pending]
        return min(times) if times else None

    def wait_a_little(self, deadline: float | None) -> None:
        """Block until something may have changed: a notify, a due entry or ``deadline``."""
        now = time.time()
        bounds = [1.0]
        if deadline is not None:
            bounds.append(deadline - now)
        if (due := self.next_due()) is not None:
            bounds.append(due - now)
        self.cond.wait(max(0.0, min(bounds)))

    def signal(self, container: _Container, signal_name: str) -> None:
        name = _signal_key(signal_name)
        if name in ("KILL", "9"):
            self.exit(container, KILLED)
            return
        reaction = container.behaviour.on_signal.get(name)
        if reaction is None:
            return  # PID 1 ignores signals it does not handle
        begins = time.time() + reaction.delay
        for line in _lines(reaction.output):
            self.schedule(container, begins + line.at, line)
        if reaction.exit_code is not None:
            ends = max([begins] + [begins + line.at for line in _lines(reaction.output)])
            self.schedule(container, ends, reaction.exit_code)
        self.advance()

    def _bind(self, container: _Container) -> list[dict]:
        used = {
            p["hostPort"]
            for c in self.containers.values()
            if c.running and c is not container
            for p in c.host_ports
        }
        with self.world.lock:
            outside = set(self.world.ports_taken_outside)
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


# --- the engine ------------------------------------------------------------------------------


class ScriptedEngine:
    """``protocol.Engine`` on a scripted daemon; the methods after the protocol steer it."""

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
        self._daemon = WORLD.daemon(url)
        self._closed = False

    def __repr__(self) -> str:
        return f"ScriptedEngine({self.url!r})"

    def close(self) -> None:
        self._closed = True
        with self._daemon.cond:
            self._daemon.cond.notify_all()

    def __enter__(self) -> ScriptedEngine:
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

    # -- the engine -------------------------------------------------------------------------

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
        """Finds what the test put in the registry (``WORLD.registry_add``); anything else is
        Docker's "manifest unknown" (permanent), the credentials redacted from the message."""
        secrets = (password, f"{username}:{password}" if username else None)
        pull_tag = tag or (None if "@" in repository else "latest")
        ref = f"{repository}:{pull_tag}" if pull_tag else repository
        with self._daemon.cond:
            daemon = self._enter("pull")
            with daemon.world.lock:
                found = _normal(ref) in daemon.world.registry
            if not found:
                message = redact(f"pull {ref}: manifest unknown: manifest unknown", secrets)
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
        check_spec(spec, extra_sockets=self._own_sockets, port_policy=self.port_policy)
        with self._daemon.cond:
            daemon = self._enter("create")
            if _normal(spec.image) not in daemon.images:
                raise RuntimeFailure(
                    f"create: No such image: {spec.image}", permanent=True, status_code=404
                )
            for mount in spec.binds:
                if not os.path.exists(mount.source):
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
            behaviour = daemon.world.behaviour(command_key(spec.command or None))
            container_id = uuid.uuid4().hex + uuid.uuid4().hex
            name = spec.name or f"scripted_{container_id[:12]}"
            container = _Container(id=container_id, name=name, spec=spec, behaviour=behaviour)
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
            if container.behaviour.not_found:
                executable = command_key(container.spec.command or None)[0]
                raise RuntimeFailure(
                    f'start: failed to create task for container: exec: "{executable}": '
                    "executable file not found in $PATH: unknown",
                    permanent=True,
                    status_code=400,
                )
            daemon.start(container)

    def put_archive(self, container_id: str, path: str, tar_bytes) -> None:
        """Unpack the tar's folders and regular files; like Docker, ``path`` must be absolute
        and the tar valid."""
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
                    container.file_write(target, content)

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
        return b"".join(
            text for _, text in self.log_frames(container_id, since=since, timestamps=timestamps)
        )

    def log_frames(
        self, container_id: str, *, since: float | None = None, timestamps: bool = False
    ) -> list[tuple[int, bytes]]:
        with self._daemon.cond:
            container = self._enter("logs").find(container_id, "logs")
            floor = int(since * NS) if since and since > 0 else 0
            return [
                (stream, (_stamp_text(ns) + b" " + line) if timestamps else line)
                for ns, stream, line in container.log
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

    # -- steering (tests only; not part of the protocol) ------------------------------------

    def finish(self, container_id: str, exit_code: int = 0, *, oom_killed: bool = False) -> None:
        """The container's process ends now with ``exit_code`` (as if OOM-killed when asked)."""
        with self._daemon.cond:
            daemon = self._daemon
            container = daemon.find(container_id, "finish")
            if not container.running:
                raise ContainerNotRunning(f"finish: container {container_id} is not running")
            daemon.exit(container, exit_code, oom=oom_killed)

    def write_log(self, container_id: str, data: bytes | str, *, stream: int = 1) -> None:
        """The process writes ``data`` now (``stream`` 2: stderr), taken as it is."""
        written = data.decode() if isinstance(data, bytes) else data
        with self._daemon.cond:
            container = self._daemon.find(container_id, "write_log")
            for text in written.splitlines():
                self._daemon.write(container, Line(text.replace("$", "$$"), stream))

    def write_file(self, container_id: str, path: str, data: bytes | str) -> None:
        """The process writes ``data`` to ``path`` (its folders made too)."""
        with self._daemon.cond:
            container = self._daemon.find(container_id, "write_file")
            container.file_write(path, data.encode() if isinstance(data, str) else data)

    def container_files(self, container_id: str) -> dict[str, bytes]:
        """The regular files in a container (path -> content)."""
        with self._daemon.cond:
            files = self._daemon.find(container_id, "files").files
            return {path: data for path, data in files.items() if data is not None}

    def container_folders(self, container_id: str) -> set[str]:
        with self._daemon.cond:
            files = self._daemon.find(container_id, "files").files
            return {path for path, data in files.items() if data is None}

    def container_spec(self, container_id: str) -> ContainerSpec:
        """The spec the container was created from (what the portal asked for)."""
        with self._daemon.cond:
            return self._daemon.find(container_id, "spec").spec

    def set_stats(self, container_id: str, **fields) -> None:
        """What the next ``stats`` readings of the container say (counters are cumulative)."""
        with self._daemon.cond:
            container = self._daemon.find(container_id, "set_stats")
            container.stats = replace(container.stats, **fields)

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
        failure.times = times  # type: ignore[attr-defined]  # this engine's mark, read above
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
        with self._daemon.cond:
            self._daemon.info = replace(self._daemon.info, **fields)


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
