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
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import asyncssh
from django.conf import settings

from ssh import access
from ssh.files import ContainerSFTPServer
from ssh.forward import forward_to_container, pipe_to
from ssh.sessions import JobSession, run_process

log = logging.getLogger("ssh")

LOCAL_NAMES = {"localhost", "127.0.0.1", "::1", "ip6-localhost"}


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


class _Server(asyncssh.SSHServer):
    """One client connection: authentication, then the job it was let into."""

    def __init__(self, gateway: Gateway):
        self.gateway = gateway
        self.conn: asyncssh.SSHServerConnection | None = None
        self.peer = "?"
        self.session: JobSession | None = None
        self.fingerprint = ""
        self._accepted: tuple[access.SshTarget, str, str, str] | None = None

    @property
    def target(self) -> access.SshTarget:
        """The job it was let into: set before the gateway remembers the connection."""
        assert self.session is not None
        return self.session.target

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
        assert self._accepted is not None  # validate_public_key accepted a key first
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
                await pipe_to(gateway.loopback_host, gateway.listening_port, reader, writer)

            return to_self
        if self.session is None or dest_host.lower() not in LOCAL_NAMES:
            raise asyncssh.ChannelOpenError(
                asyncssh.OPEN_ADMINISTRATIVELY_PROHIBITED,
                "only ports of the job's container (localhost:PORT) can be forwarded",
            )
        session = self.session

        async def forward(reader, writer):
            await forward_to_container(session, dest_port, reader, writer)

        return forward

    def server_requested(self, listen_host, listen_port):
        return False  # no -R: nothing listens on the gateway's host for a job


class Gateway:
    """The server, its live connections and the watchdog that ends sessions of ended jobs."""

    def __init__(self, *, host: str, port: int, host_key_path: Path, poll_s: float = 2.0):
        self.host, self.port = host, port
        self.host_key_path = Path(host_key_path)
        self.poll_s = poll_s
        self.executor = ThreadPoolExecutor(max_workers=32, thread_name_prefix="ssh-gateway")
        self.connections: set[_Server] = set()
        self.server: asyncssh.SSHAcceptor | None = None
        self.listening_port = port
        self._watchdog: asyncio.Task | None = None

    @property
    def loopback_host(self) -> str:
        return "127.0.0.1" if self.host in ("", "0.0.0.0", "::") else self.host

    def is_own_address(self, host: str, port: int) -> bool:
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
        self.server = server = await asyncssh.create_server(
            lambda: _Server(self),
            self.host,
            self.port,
            server_host_keys=[key],
            process_factory=lambda process: run_process(self, process),
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
        self.listening_port = server.sockets[0].getsockname()[1]
        return self.listening_port

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(self.poll_s)
            live = list(self.connections)
            if not live:
                continue
            try:
                running = await self.run(
                    access.ssh_job_running, job_ids=sorted({c.target.job_id for c in live})
                )
                withdrawn = await self.run(
                    access.ssh_keys_withdrawn, fingerprints=sorted({c.fingerprint for c in live})
                )
            except Exception:  # noqa: BLE001 - database hiccup: try again next round
                log.exception("SSH gateway: cannot read job states")
                continue
            for conn in live:
                if conn.target.job_id not in running:
                    self._end(conn, "the job is no longer running")
                elif conn.fingerprint in withdrawn:
                    self._end(conn, "the key's login certificate is no longer valid")

    def _end(self, conn: _Server, why: str) -> None:
        if conn.conn is None:
            return
        self.forget(conn)
        self.record(conn.target.job_id, f"SSH connection from {conn.peer} ended: {why}")
        if conn.session is not None:
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
