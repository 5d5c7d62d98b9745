"""Session channels of the SSH gateway: one ``docker exec`` in the job's container each.

``JobSession`` is what an authenticated connection may reach (the job's container on its slave);
``run_process`` serves a shell or a command; the pumps copy bytes between the SSH channel and
the exec's stream (a reader thread per stream: the engine connection may be TLS, which asyncio
cannot adopt).
"""

from __future__ import annotations

import asyncio
import logging
import struct
import threading
from concurrent.futures import Executor
from typing import Any, Protocol

import asyncssh

from ssh import access

log = logging.getLogger("ssh")

SHELL = [
    "/bin/sh",
    "-c",
    "if command -v bash >/dev/null 2>&1; then exec bash -l; else exec sh -l; fi",
]
READ_SIZE = 65536


class Gateway(Protocol):
    """What a session needs of ``ssh.gateway.Gateway`` (which imports this module): its
    thread pool, and a way to run a blocking call there."""

    @property
    def executor(self) -> Executor: ...

    async def run(self, fn, *args, **kwargs): ...


class Demux:
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


async def run_process(gateway: Gateway, process: asyncssh.SSHServerProcess) -> None:
    """One session channel: a shell or a command, as an exec in the container."""
    # The connection's gateway._Server (not named here: gateway.py imports this module).
    server: Any = process.channel.get_connection().get_owner()
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
        await pump_output(process, stream, tty=tty)
    finally:
        stdin_task.cancel()
        session.streams.discard(stream)
        stream.close()
    code = await exec_exit_status(session, stream.exec_id)
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


async def pump_output(process, stream, *, tty: bool) -> None:
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
    demux = None if tty else Demux()
    while (data := await queue.get()) is not None:
        chunks = [(1, data)] if demux is None else demux.feed(data)
        for kind, chunk in chunks:
            (process.stderr if kind == 2 else process.stdout).write(chunk)
        try:
            await process.stdout.drain()
        except (asyncssh.Error, OSError):
            return


async def exec_exit_status(session: JobSession, exec_id: str) -> int:
    for _ in range(20):
        try:
            code = await session.call(lambda e: e.exec_exit_code(exec_id))
        except Exception:  # noqa: BLE001 - the container went away: report a failure
            return 255
        if code is not None:
            return int(code)
        await asyncio.sleep(0.1)
    return 255
