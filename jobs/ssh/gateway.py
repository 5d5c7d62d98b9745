"""The SSH gateway: OpenSSH and ``gpulab-cli ssh`` in, ``docker exec`` in the job's container out.

One asyncio server (asyncssh) for all jobs. A connection authenticates as a job (access.py);
then each session channel becomes one exec in the job's container, run as the container's own
user (the job's ``docker.user``): a login shell with a TTY when the client asks for one, else
``sh -c <command>``. SFTP and scp (both protocols) are served by files.py from the container's
files; ``-L`` forwards reach ports of the job's own container only. A watchdog closes every
connection of a job as soon as the job leaves RUNNING, and those that logged in with the key of
a login certificate revoked or expired since. Blocking work (ORM, Docker API, the
exec sockets) runs in threads so one slow engine never stalls other connections.
"""

from __future__ import annotations

import asyncio
import logging
import os
import struct
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import asyncssh

from jobs.ssh import access
from jobs.ssh.files import ContainerSFTPServer

log = logging.getLogger("jobs.ssh")

LOCAL_NAMES = {"localhost", "127.0.0.1", "::1", "ip6-localhost"}
# A login shell: bash when the image has one, else sh.
SHELL = [
    "/bin/sh",
    "-c",
    "if command -v bash >/dev/null 2>&1; then exec bash -l; else exec sh -l; fi",
]
READ_SIZE = 65536


def host_key_load_or_create(path: Path) -> asyncssh.SSHKey:
    """The gateway's host key, made once (ed25519, mode 0600) so clients can pin it."""
    path = Path(path)
    if path.exists():
        return asyncssh.read_private_key(str(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    key = asyncssh.generate_private_key("ssh-ed25519")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(key.export_private_key())
    return key


class _Demux:
    """Docker's multiplexed exec stream (8-byte header: stream, 0, 0, 0, size) -> chunks."""

    def __init__(self):
        self.buffer = b""

    def feed(self, data: bytes) -> list[tuple[int, bytes]]:
        self.buffer += data
        out = []
        while len(self.buffer) >= 8:
            kind, size = self.buffer[0], struct.unpack(">I", self.buffer[4:8])[0]
            if len(self.buffer) < 8 + size:
                break
            out.append((kind, self.buffer[8 : 8 + size]))
            self.buffer = self.buffer[8 + size :]
        return out


class JobSession:
    """What one authenticated connection may reach: the job's container on its slave."""

    def __init__(self, gateway: Gateway, target: access.SshTarget):
        self.gateway = gateway
        self.target = target
        self.engine_url = target.engine_url
        self._engine = None
        self._lock = asyncio.Lock()
        self.streams: set = set()

    async def call(self, fn, *args, **kwargs):
        """Run a blocking engine call in the gateway's threads, one at a time per connection
        (the engine's HTTP session is not shared across threads)."""
        async with self._lock:
            if self._engine is None:
                self._engine = await self.gateway.run(
                    access.ssh_engine_for, slave_id=self.target.slave_id
                )
            engine = self._engine
            return await self.gateway.run(lambda: fn(engine, *args, **kwargs))

    async def exec_open(self, command: list[str], *, tty: bool, environment=None):
        stream = await self.call(
            lambda engine: engine.exec_open(
                self.target.container_id, command, tty=tty, environment=environment
            )
        )
        self.streams.add(stream)
        return stream

    def close(self) -> None:
        for stream in list(self.streams):
            stream.close()
        self.streams.clear()
        if self._engine is not None:
            engine, self._engine = self._engine, None
            self.gateway.executor.submit(engine.close)


class _Server(asyncssh.SSHServer):
    """One client connection: authentication, then the job it was let into."""

    def __init__(self, gateway: Gateway):
        self.gateway = gateway
        self.conn: asyncssh.SSHServerConnection | None = None
        self.peer = "?"
        self.session: JobSession | None = None
        self.fingerprint = ""
        self._accepted: tuple[access.SshTarget, str, str, str] | None = None

    def connection_made(self, conn):
        self.conn = conn
        peer = conn.get_extra_info("peername")
        self.peer = str(peer[0]) if peer else "?"

    def connection_lost(self, exc):
        if self.session is not None:
            self.session.close()
            if self in self.gateway.connections:  # not already ended by the watchdog
                self.gateway.forget(self)
                target = self.session.target
                self.gateway.record(target.job_id, f"SSH connection from {self.peer} closed")

    def begin_auth(self, username):
        return True  # every login needs a key

    def password_auth_supported(self):
        return False

    def kbdint_auth_supported(self):
        return False

    def public_key_auth_supported(self):
        return True

    async def validate_public_key(self, username, key):
        fingerprint = key.get_fingerprint("sha256")
        decision = await self.gateway.run(
            access.ssh_login_check,
            username=username,
            blob=key.public_data,
            fingerprint=fingerprint,
        )
        if not decision.allowed:
            log.info(
                "SSH key %s refused for %r from %s: %s",
                fingerprint,
                username,
                self.peer,
                decision.reason,
            )
            return False
        self._accepted = (decision.target, fingerprint, key.get_algorithm(), decision.reason)
        return True

    def auth_completed(self):
        target, fingerprint, algorithm, reason = self._accepted
        self.fingerprint = fingerprint
        self.session = JobSession(self.gateway, target)
        self.gateway.remember(self)
        self.gateway.record(
            target.job_id,
            f"SSH login from {self.peer} with {algorithm} key {fingerprint} ({reason})",
        )

    def connection_requested(self, dest_host, dest_port, orig_host, orig_port):
        """``ssh -L``: only ports of the job's own container, named as localhost. One more
        destination: the gateway itself as the job's advertised SSH address, so that the
        gateway can be its own ``sshProxyHost`` (gpulab-cli's ProxyCommand ... -W %h:%p)."""
        if self.session is not None and self.gateway.is_own_address(dest_host, dest_port):
            gateway = self.gateway

            async def to_self(reader, writer):
                await _pipe_to(gateway.loopback_host, gateway.listening_port, reader, writer)

            return to_self
        if self.session is None or dest_host.lower() not in LOCAL_NAMES:
            raise asyncssh.ChannelOpenError(
                asyncssh.OPEN_ADMINISTRATIVELY_PROHIBITED,
                "only ports of the job's container (localhost:PORT) can be forwarded",
            )
        session = self.session

        async def forward(reader, writer):
            await _forward(session, dest_port, reader, writer)

        return forward

    def server_requested(self, listen_host, listen_port):
        return False  # no -R: nothing listens on the gateway's host for a job


# Inside the container, connect stdin/stdout to 127.0.0.1:$1 with whatever the image has.
FORWARD_SCRIPT = """
if command -v nc >/dev/null 2>&1; then exec nc 127.0.0.1 "$1"; fi
if command -v socat >/dev/null 2>&1; then exec socat - "TCP:127.0.0.1:$1"; fi
if command -v bash >/dev/null 2>&1; then
  exec bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$0" || exit 1; cat <&3 & cat >&3; wait' "$1"
fi
echo "the image has no nc, socat or bash to reach the port" >&2; exit 127
"""


def _direct_forward(session: JobSession) -> bool:
    """Containers of an engine on this host (a unix socket) are reachable on their bridge
    address; those of remote engines are reached from inside the container instead."""
    return session.engine_url.startswith("unix://")


async def _forward(session: JobSession, port: int, reader, writer) -> None:
    """Pipe one forwarded connection to ``port`` of the job's container."""
    if not _direct_forward(session):
        await _forward_by_exec(session, port, reader, writer)
        return
    try:
        address = await session.call(
            lambda engine: engine.container_address(session.target.container_id)
        )
        if not address:
            raise OSError("the container has no network address")
    except Exception as error:  # noqa: BLE001 - engine, network or timeout: drop this one
        log.info("forward to port %s of job %s failed: %s", port, session.target.job_uuid, error)
        writer.close()
        return
    await _pipe_to(address, port, reader, writer)


async def _forward_by_exec(session: JobSession, port: int, reader, writer) -> None:
    """Pipe one forwarded connection through ``nc``/``socat``/bash run in the container."""
    try:
        stream = await session.exec_open(
            ["/bin/sh", "-c", FORWARD_SCRIPT, "forward", str(int(port))], tty=False
        )
    except Exception as error:  # noqa: BLE001 - engine failure: drop this connection
        log.info("forward to port %s of job %s failed: %s", port, session.target.job_uuid, error)
        writer.close()
        return
    gateway = session.gateway

    async def inbound():
        try:
            while data := await reader.read(READ_SIZE):
                await gateway.run(stream.write, data)
            stream.close_input()
        except (OSError, asyncssh.Error):
            pass

    task = asyncio.create_task(inbound())
    try:
        await _pump_output(_ChannelSink(writer), stream, tty=False)
    finally:
        task.cancel()
        session.streams.discard(stream)
        stream.close()
        try:
            writer.write_eof()
        except (OSError, asyncssh.Error, RuntimeError):
            pass
        writer.close()


class _ChannelSink:
    """A forwarded channel where _pump_output expects a session: stdout to the channel,
    stderr (the script's complaints) to the log."""

    def __init__(self, writer):
        self.stdout = writer
        self.stderr = self

    def write(self, data: bytes) -> None:
        log.info("port forward: %s", data.decode(errors="replace").strip())


async def _pipe_to(host: str, port: int, reader, writer) -> None:
    """Connect to ``host:port`` and copy both ways until both sides are done."""
    try:
        up_reader, up_writer = await asyncio.wait_for(
            asyncio.open_connection(host, port), timeout=10
        )
    except Exception as error:  # noqa: BLE001 - refused, unreachable or timeout
        log.info("forward to %s:%s failed: %s", host, port, error)
        writer.close()
        return

    async def pipe(source, sink, *, eof):
        try:
            while data := await source.read(READ_SIZE):
                sink.write(data)
                await sink.drain()
        except (OSError, asyncssh.Error):
            pass
        finally:
            try:
                eof()
            except (OSError, asyncssh.Error, RuntimeError):
                pass

    await asyncio.gather(
        pipe(reader, up_writer, eof=up_writer.write_eof),
        pipe(up_reader, writer, eof=writer.write_eof),
    )
    up_writer.close()
    writer.close()


async def _run_process(gateway: Gateway, process: asyncssh.SSHServerProcess) -> None:
    """One session channel: a shell or a command, as an exec in the container."""
    server: _Server = process.channel.get_connection().get_owner()
    session = server.session
    if session is None or process.subsystem:
        process.stderr.write(b"this gateway serves shells, commands, sftp and scp only\n")
        process.exit(1)
        return
    term = process.get_terminal_type()
    tty = term is not None
    command = ["/bin/sh", "-c", process.command] if process.command else SHELL
    environment = {"TERM": term} if term else {}
    try:
        stream = await session.exec_open(command, tty=tty, environment=environment)
    except Exception as error:  # noqa: BLE001 - any engine failure ends this channel
        process.stderr.write(f"cannot start a session in the job's container: {error}\n".encode())
        process.exit(255)
        return
    if tty:
        width, height, _, _ = process.get_terminal_size()
        if width and height:
            await _resize(session, stream.exec_id, width, height)
    stdin_task = asyncio.create_task(_pump_stdin(gateway, session, process, stream, stream_tty=tty))
    try:
        await _pump_output(process, stream, tty=tty)
    finally:
        stdin_task.cancel()
        session.streams.discard(stream)
        stream.close()
    code = await _exit_code(session, stream.exec_id)
    process.exit(code)


async def _resize(session: JobSession, exec_id: str, width: int, height: int) -> None:
    try:
        await session.call(lambda e: e.exec_resize(exec_id, width=width, height=height))
    except Exception:  # noqa: BLE001 - a failed resize leaves the old size
        pass


async def _pump_stdin(gateway, session, process, stream, *, stream_tty: bool) -> None:
    while True:
        try:
            data = await process.stdin.read(READ_SIZE)
        except asyncssh.TerminalSizeChanged as change:
            await _resize(session, stream.exec_id, change.width, change.height)
            continue
        except (asyncssh.BreakReceived, asyncssh.SignalReceived):
            continue
        except (asyncssh.Error, OSError):
            return
        if not data:
            break
        try:
            await gateway.run(stream.write, data)
        except OSError:
            return
    if stream_tty:
        # End of input on a terminal: Ctrl-D, as a terminal would send. (Half-closing a TTY
        # exec makes Docker drop the output that is still on its way.)
        try:
            await gateway.run(stream.write, b"\x04")
        except OSError:
            pass
    else:
        # End of input: half-close, so a command reading stdin sees EOF (TLS cannot).
        stream.close_input()


async def _pump_output(process, stream, *, tty: bool) -> None:
    """Copy the exec's output to the channel until the exec ends; a reader thread per stream
    (the socket may be TLS, which asyncio cannot adopt)."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue = asyncio.Queue(maxsize=64)

    def reader():
        try:
            while data := stream.read(READ_SIZE):
                asyncio.run_coroutine_threadsafe(queue.put(data), loop).result()
        except (OSError, RuntimeError, asyncio.CancelledError):
            pass
        finally:
            try:
                asyncio.run_coroutine_threadsafe(queue.put(None), loop)
            except RuntimeError:
                pass  # the loop is gone: the gateway is stopping

    threading.Thread(target=reader, daemon=True, name="ssh-exec-reader").start()
    demux = None if tty else _Demux()
    while (data := await queue.get()) is not None:
        chunks = [(1, data)] if demux is None else demux.feed(data)
        for kind, chunk in chunks:
            (process.stderr if kind == 2 else process.stdout).write(chunk)
        try:
            await process.stdout.drain()
        except (asyncssh.Error, OSError):
            return


async def _exit_code(session: JobSession, exec_id: str) -> int:
    for _ in range(20):
        try:
            code = await session.call(lambda e: e.exec_exit_code(exec_id))
        except Exception:  # noqa: BLE001 - the container went away: report a failure
            return 255
        if code is not None:
            return int(code)
        await asyncio.sleep(0.1)
    return 255


class Gateway:
    """The server, its live connections and the watchdog that ends sessions of ended jobs."""

    def __init__(self, *, host: str, port: int, host_key_path: Path, poll_s: float = 2.0):
        self.host, self.port = host, port
        self.host_key_path = Path(host_key_path)
        self.poll_s = poll_s
        self.executor = ThreadPoolExecutor(max_workers=32, thread_name_prefix="ssh-gateway")
        self.connections: set[_Server] = set()
        self.server = None
        self.listening_port = port
        self._watchdog: asyncio.Task | None = None

    @property
    def loopback_host(self) -> str:
        return "127.0.0.1" if self.host in ("", "0.0.0.0", "::") else self.host

    def is_own_address(self, host: str, port: int) -> bool:
        from django.conf import settings

        own_hosts = {settings.PORTAL_SSH_HOST.lower(), self.loopback_host}
        return host.lower() in own_hosts and port == settings.PORTAL_SSH_PORT

    async def run(self, fn, *args, **kwargs):
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.executor, lambda: fn(*args, **kwargs))

    def remember(self, server: _Server) -> None:
        self.connections.add(server)

    def forget(self, server: _Server) -> None:
        self.connections.discard(server)

    def record(self, job_id: int, message: str) -> None:
        self.executor.submit(access.ssh_event_record, job_id=job_id, message=message)

    async def start(self) -> int:
        """Listen; returns the port (useful with port 0)."""
        key = await self.run(host_key_load_or_create, self.host_key_path)
        self.server = await asyncssh.create_server(
            lambda: _Server(self),
            self.host,
            self.port,
            server_host_keys=[key],
            process_factory=lambda process: _run_process(self, process),
            sftp_factory=ContainerSFTPServer,
            allow_scp=True,
            encoding=None,
            line_editor=False,
            agent_forwarding=False,
            x11_forwarding=False,
            login_timeout=60,
            keepalive_interval=30,
        )
        self._watchdog = asyncio.create_task(self._watch())
        self.listening_port = self.server.sockets[0].getsockname()[1]
        return self.listening_port

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(self.poll_s)
            live = list(self.connections)
            if not live:
                continue
            try:
                running = await self.run(
                    access.ssh_job_running, job_ids=sorted({c.session.target.job_id for c in live})
                )
                withdrawn = await self.run(
                    access.ssh_keys_withdrawn, fingerprints=sorted({c.fingerprint for c in live})
                )
            except Exception:  # noqa: BLE001 - database hiccup: try again next round
                log.exception("SSH gateway: cannot read job states")
                continue
            for conn in live:
                if conn.session.target.job_id not in running:
                    self._end(conn, "the job is no longer running")
                elif conn.fingerprint in withdrawn:
                    self._end(conn, "the key's login certificate is no longer valid")

    def _end(self, conn: _Server, why: str) -> None:
        if conn.conn is None:
            return
        self.forget(conn)
        self.record(conn.session.target.job_id, f"SSH connection from {conn.peer} ended: {why}")
        conn.session.close()
        conn.conn.disconnect(asyncssh.DISC_BY_APPLICATION, why)

    async def stop(self) -> None:
        if self._watchdog is not None:
            self._watchdog.cancel()
        for conn in list(self.connections):
            if conn.conn is not None:
                conn.conn.close()
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()
        self.executor.shutdown(wait=False, cancel_futures=True)

    async def serve_forever(self) -> None:
        await self.start()
        try:
            await asyncio.Event().wait()
        finally:
            await self.stop()
