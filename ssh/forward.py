"""``ssh -L`` (and ``-W``) channels of the SSH gateway: to a port of the job's container, or to
the gateway itself when it serves as the job's jump host."""

from __future__ import annotations

import asyncio
import logging

import asyncssh

from ssh.sessions import READ_SIZE, JobSession, pump_output

log = logging.getLogger("ssh")

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


async def forward_to_container(session: JobSession, port: int, reader, writer) -> None:
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
    await pipe_to(address, port, reader, writer)


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
        await pump_output(_ChannelSink(writer), stream, tty=False)
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
    """A forwarded channel where pump_output expects a session: stdout to the channel,
    stderr (the script's complaints) to the log."""

    def __init__(self, writer):
        self.stdout = writer
        self.stderr = self

    def write(self, data: bytes) -> None:
        log.info("port forward: %s", data.decode(errors="replace").strip())


async def pipe_to(host: str, port: int, reader, writer) -> None:
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
