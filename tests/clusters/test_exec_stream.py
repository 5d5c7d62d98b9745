"""ExecStream, the hijacked exec connection the SSH gateway reads and writes from two threads:
over a plain socket and over TLS (a TLS connection must not be used by two threads at once)."""

import datetime
import socket
import ssl
import threading

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from clusters.runtime.engine import ExecStream


def echo_upper(conn, chunks: int) -> None:
    """The engine's side: answer each chunk with its upper-case copy, then close."""
    for _ in range(chunks):
        data = conn.recv(4096)
        conn.sendall(data.upper())
    conn.close()


def test_plain_socket_pending_first_then_half_close():
    ours, theirs = socket.socketpair()
    stream = ExecStream(exec_id="x", sock=ours, pending=b"early ")
    assert stream.read() == b"early "
    stream.write(b"abc")
    assert theirs.recv(10) == b"abc"
    assert stream.close_input() is True
    assert theirs.recv(10) == b""  # the engine sees end of input
    theirs.sendall(b"out")
    theirs.close()
    assert stream.read() == b"out"
    assert stream.read() == b""
    stream.close()


def _tls_pair(tmp_path):
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "engine")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    (tmp_path / "cert.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (tmp_path / "key.pem").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(tmp_path / "cert.pem", tmp_path / "key.pem")
    client_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    client_ctx.check_hostname = False
    client_ctx.verify_mode = ssl.CERT_NONE
    a, b = socket.socketpair()
    box = {}
    server = threading.Thread(
        target=lambda: box.setdefault("s", server_ctx.wrap_socket(b, server_side=True))
    )
    server.start()
    client = client_ctx.wrap_socket(a)
    server.join(10)
    return client, box["s"]


def test_tls_reads_and_writes_from_two_threads_take_turns(tmp_path):
    ours, theirs = _tls_pair(tmp_path)
    engine = threading.Thread(target=echo_upper, args=(theirs, 50))
    engine.start()
    stream = ExecStream(exec_id="x", sock=ours)
    received = []

    def reader():
        while data := stream.read():
            received.append(data)

    thread = threading.Thread(target=reader)
    thread.start()  # blocked in read while the writes below go through
    for i in range(50):
        stream.write(b"chunk-%02d;" % i)
    thread.join(20)
    engine.join(20)
    assert not thread.is_alive()
    assert b"".join(received) == b"".join(b"CHUNK-%02d;" % i for i in range(50))
    assert stream.close_input() is False  # TLS cannot half-close
    stream.close()
