"""The portal's certificate authority: one key pair and self-signed certificate on disk.

The key lives OUTSIDE the database, in ``settings.PORTAL_CA_DIR`` (``ca.key``, mode 0600;
``ca.pem`` is the public certificate the TLS front end trusts for client certificates). It is
created by ``manage.py ca_init`` or on first use; creation is serialised with a file lock so
that two processes starting at once end up with one CA.
"""

import datetime
import fcntl
import os
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

KEY_FILE = "ca.key"
CERT_FILE = "ca.pem"
LOCK_FILE = ".lock"
CA_VALID_DAYS = 3650


@dataclass(frozen=True)
class CertificateAuthority:
    key: ec.EllipticCurvePrivateKey
    certificate: x509.Certificate
    cert_path: Path

    @property
    def fingerprint(self) -> str:
        return self.certificate.fingerprint(hashes.SHA256()).hex()


def ca_dir() -> Path:
    return Path(settings.PORTAL_CA_DIR)


# Loaded CAs by (directory, certificate mtime): the key is read from disk once per process.
_cache: dict[tuple[str, int], CertificateAuthority] = {}
_cache_lock = threading.Lock()


def ca_load() -> CertificateAuthority | None:
    """The CA in ``PORTAL_CA_DIR``, or None when none was created (completely) yet.

    The key file is written last: while it is missing the CA does not exist yet.
    """
    directory = ca_dir()
    key_path, cert_path = directory / KEY_FILE, directory / CERT_FILE
    if not key_path.exists():
        return None
    try:
        stamp = cert_path.stat().st_mtime_ns
    except FileNotFoundError:
        raise ImproperlyConfigured(
            f"{key_path} exists but its certificate {cert_path} is missing: restore it"
        ) from None
    cache_key = (str(directory.resolve()), stamp)
    with _cache_lock:
        cached = _cache.get(cache_key)
    if cached is not None:
        return cached
    key = serialization.load_pem_private_key(key_path.read_bytes(), password=None)
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise ImproperlyConfigured(f"{key_path} is not the portal CA's (elliptic curve) key")
    certificate = x509.load_pem_x509_certificate(cert_path.read_bytes())
    authority = CertificateAuthority(key=key, certificate=certificate, cert_path=cert_path)
    with _cache_lock:
        _cache.clear()
        _cache[cache_key] = authority
    return authority


def ca_get_or_create(*, now: datetime.datetime | None = None) -> tuple[CertificateAuthority, bool]:
    """The portal CA, created first if needed. Returns (ca, created)."""
    existing = ca_load()
    if existing is not None:
        return existing, False
    directory = ca_dir()
    directory.mkdir(parents=True, exist_ok=True)
    os.chmod(directory, 0o700)
    with _locked(directory / LOCK_FILE):
        existing = ca_load()  # another process may have won the race
        if existing is not None:
            return existing, False
        key, certificate = _new_ca(now or datetime.datetime.now(datetime.UTC))
        # Certificate first, key last: the key's presence marks a complete CA.
        _write_private(
            directory / CERT_FILE,
            certificate.public_bytes(serialization.Encoding.PEM),
            mode=0o644,
        )
        _write_private(
            directory / KEY_FILE,
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            ),
            mode=0o600,
        )
    created = ca_load()
    assert created is not None  # its key was just written
    return created, True


def ca_get() -> CertificateAuthority:
    return ca_get_or_create()[0]


def ca_name() -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "GPU Portal"),
            x509.NameAttribute(
                NameOID.COMMON_NAME, f"GPU Portal login CA ({settings.PORTAL_INSTANCE})"[:64]
            ),
        ]
    )


def _new_ca(now: datetime.datetime) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = ca_name()
    public = key.public_key()
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(public)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=CA_VALID_DAYS))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=False,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(public), critical=False)
        .sign(key, hashes.SHA256())
    )
    return key, certificate


def _write_private(path: Path, data: bytes, *, mode: int) -> None:
    """Write ``data`` to a fresh temporary file with ``mode`` and move it into place."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    os.chmod(tmp, mode)  # the umask may have removed bits we want (0644 for the cert)
    tmp.replace(path)


@contextmanager
def _locked(path: Path):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
