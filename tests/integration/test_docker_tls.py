"""A slave reached over ``tcp://`` with TLS and a client certificate, as GPU hosts on other
machines are (docs/scale-out.md).

dockerd's ``--tlsverify`` is TLS that demands a client certificate signed by the CA it trusts.
The test puts exactly that in front of the local engine: a TLS endpoint on 127.0.0.1 (server
certificate and client CA made here with ``cryptography``) relaying bytes to the engine's unix
socket. The portal side is the real one: ``slave_register`` with the TLS files, the probe, a
job launched, watched and finished over that connection.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
import select
import socket
import ssl
import threading
import time
from pathlib import Path
from urllib.parse import urlparse

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from accounts.models import Membership, Project
from clusters.models import Cluster
from clusters.runtime.engine import DockerEngine
from clusters.runtime.errors import RuntimeFailure
from clusters.services import engine_for, slave_declare_gpus, slave_probe, slave_register
from jobs.execution.logs import job_log_bytes
from jobs.execution.reconcile import reconcile_all
from jobs.execution.watcher import SlaveWatch
from jobs.models import Job
from jobs.user_actions.services import job_submit
from tests.integration.docker_support import TEST_IMAGE, docker_url, require_docker

pytestmark = [pytest.mark.docker, pytest.mark.django_db(transaction=True)]


def _key():
    return ec.generate_private_key(ec.SECP256R1())


def _cert(subject, key, issuer, issuer_key, *, ca=False, server=False, client=False):
    now = dt.datetime.now(dt.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
        .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer)]))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if server:
        builder = builder.add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        ).add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
    if client:
        builder = builder.add_extension(
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False
        )
    return builder.sign(issuer_key, hashes.SHA256())


def _write(path: Path, key=None, cert=None) -> str:
    data = b""
    if cert is not None:
        data += cert.public_bytes(serialization.Encoding.PEM)
    if key is not None:
        data += key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    path.write_bytes(data)
    path.chmod(0o600)
    return str(path)


class TlsRelay(threading.Thread):
    """TLS on 127.0.0.1 (client certificate required) relayed to a unix socket."""

    def __init__(self, unix_path: str, context: ssl.SSLContext):
        super().__init__(daemon=True)
        self.unix_path, self.context = unix_path, context
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.stopping = threading.Event()

    def run(self) -> None:
        self.listener.settimeout(0.2)
        while not self.stopping.is_set():
            try:
                raw, _ = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=self._serve, args=(raw,), daemon=True).start()

    def _serve(self, raw: socket.socket) -> None:
        try:
            tls = self.context.wrap_socket(raw, server_side=True)
        except (ssl.SSLError, OSError):
            raw.close()  # no or a bad client certificate: refused, as dockerd --tlsverify does
            return
        upstream = socket.socket(socket.AF_UNIX)
        upstream.connect(self.unix_path)
        try:
            while not self.stopping.is_set():
                ready = [tls] if tls.pending() else select.select([tls, upstream], [], [], 0.5)[0]
                for source in ready:
                    data = source.recv(65536)
                    if not data:
                        return
                    (upstream if source is tls else tls).sendall(data)
        except (ssl.SSLError, OSError):
            return
        finally:
            upstream.close()
            tls.close()

    def stop(self) -> None:
        self.stopping.set()
        self.listener.close()


@pytest.fixture
def tls_engine(tmp_path):
    """(tcp URL, CA file, client cert file, client key file) of the local engine over TLS."""
    require_docker(docker_url())
    unix_path = urlparse(docker_url()).path
    ca_key, server_key, client_key = _key(), _key(), _key()
    ca = _cert("test docker CA", ca_key, "test docker CA", ca_key, ca=True)
    server = _cert("localhost", server_key, "test docker CA", ca_key, server=True)
    client = _cert("portal", client_key, "test docker CA", ca_key, client=True)
    ca_file = _write(tmp_path / "ca.pem", cert=ca)
    server_file = _write(tmp_path / "server.pem", key=server_key, cert=server)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(server_file)
    context.load_verify_locations(ca_file)
    context.verify_mode = ssl.CERT_REQUIRED
    relay = TlsRelay(unix_path, context)
    relay.start()
    yield (
        f"tcp://127.0.0.1:{relay.port}",
        ca_file,
        _write(tmp_path / "cert.pem", cert=client),
        _write(tmp_path / "key.pem", key=client_key),
    )
    relay.stop()


@pytest.fixture
def runtime(settings):
    settings.PORTAL_TASK_MODE = "inline"
    settings.PORTAL_INSTANCE = f"tls-{os.getpid()}-{time.monotonic_ns()}"
    return settings


def test_engine_refuses_a_client_without_certificate(tls_engine):
    url, ca, cert, key = tls_engine
    anonymous = DockerEngine(url, tls_ca=ca, timeout=10)
    with_cert = DockerEngine(url, tls_ca=ca, tls_cert=cert, tls_key=key, timeout=10)
    try:
        with pytest.raises(RuntimeFailure):
            anonymous.info()
        assert with_cert.info()  # the same endpoint and CA, with the client certificate
    finally:
        anonymous.close()
        with_cert.close()


def test_job_runs_on_a_slave_over_tls(
    tls_engine, runtime, django_user_model, monkeypatch, tmp_path
):
    url, ca, cert, key = tls_engine
    # A host-wide CA bundle for requests (common on managed machines) must not replace the
    # slave's own CA: point it at an unrelated CA.
    decoy_key = _key()
    decoy = _cert("some other CA", decoy_key, "some other CA", decoy_key, ca=True)
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", _write(tmp_path / "decoy.pem", cert=decoy))
    cluster = Cluster.objects.create(id=1)
    slave = slave_register(
        name="remote",
        cluster=cluster,
        docker_url=url,
        host="127.0.0.1",
        tls_ca=ca,
        tls_cert=cert,
        tls_key=key,
    )
    slave_declare_gpus(slave=slave, gpus=[("Demo GPU", 1024)])
    slave = slave_probe(slave=slave)
    assert slave.online, slave.offline_reason
    assert slave.cpus_total > 0 and slave.memory_total_mb > 0

    user = django_user_model.objects.create_user("tess")
    project = Project.objects.create(name="tls", gid=4444)
    Membership.objects.create(user=user, project=project)
    stop = threading.Event()
    watch = SlaveWatch(slave, stop)
    watch.start()
    time.sleep(0.3)  # let the event stream open
    try:
        job = job_submit(
            user=user,
            project=project,
            document={
                "name": "over-tls",
                "request": {
                    "resources": {"gpus": 1, "cpus": 1, "cpuMemoryGb": 1},
                    "docker": {"image": TEST_IMAGE, "command": "sh -c 'echo hello-over-tls'"},
                },
            },
        )
        began = time.monotonic()
        while job.status not in ("FINISHED", "FAILED", "CANCELLED"):
            assert time.monotonic() < began + 90, f"job stayed {job.status}: {job.end_reason}"
            if time.monotonic() > began + 20:
                reconcile_all()  # a die event missed on a loaded machine: reconcile, over TLS too
            time.sleep(0.2)
            job.refresh_from_db()
        assert job.status == "FINISHED", job.end_reason
        assert job.slave.name == "remote"
        assert b"hello-over-tls" in job_log_bytes(job)
    finally:
        stop.set()
        with engine_for(slave) as engine:
            for state in engine.list_by_labels({"gpuportal.instance": runtime.PORTAL_INSTANCE}):
                engine.remove(state.id)
    assert Job.objects.filter(status="FINISHED").count() == 1
