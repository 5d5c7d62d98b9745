"""Login certificates: issue, revoke, list, and verify one handed over by the TLS front end.

A login PEM is what GPULab calls it: a fresh RSA key and a certificate in one file. gpulab-cli
reads the user's URN from the certificate's FIRST SubjectAltName URI and the e-mail from its
first RFC822 name, uses the pair for TLS client authentication, and adds the RSA public key to
its jobs' SSH keys (that is why the key is RSA).
"""

import base64
import datetime
import hashlib
from dataclasses import dataclass
from urllib.parse import unquote

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from django.conf import settings
from django.db.models import QuerySet
from django.utils import timezone

from accounts.certs.ca import ca_get, ca_load
from accounts.emails import HIDDEN_EMAIL, email_for_gpulab
from accounts.models import LoginCertificate, user_urn
from core.errors import NotAllowed

# Accept certificates issued a little "in the future" by a server whose clock runs ahead.
CLOCK_SKEW = datetime.timedelta(minutes=5)
USER_KEY_BITS = 2048


class CertificateRejected(Exception):
    """A client certificate that must not log anybody in; the message says why."""


@dataclass(frozen=True)
class IssuedLoginPem:
    certificate: LoginCertificate
    pem: bytes  # private key + certificate, for the user to download once

    @property
    def filename(self) -> str:
        return f"gpuportal-login-{self.certificate.user.username}.pem"


def login_certificate_issue(*, user, now: datetime.datetime | None = None) -> IssuedLoginPem:
    """A fresh key pair and certificate for ``user``, valid PORTAL_CERT_VALID_DAYS days."""
    now = now or timezone.now()
    ca = ca_get()
    urn = user_urn(user.username)
    if not urn.isascii() or any(c.isspace() for c in urn):
        raise NotAllowed(
            "user names with spaces or non-ASCII characters cannot get a login certificate"
        )
    names: list[x509.GeneralName] = [x509.UniformResourceIdentifier(urn)]
    # gpulab-cli reads the submitter's address from this SAN and fails on every submit without
    # one: a user with no address the client accepts gets GPULab's hidden placeholder.
    email = email_for_gpulab((user.email or "").strip())
    if not email.isascii():
        email = HIDDEN_EMAIL
    names.append(x509.RFC822Name(email))
    not_before = now - CLOCK_SKEW
    not_after = min(
        now + datetime.timedelta(days=settings.PORTAL_CERT_VALID_DAYS),
        ca.certificate.not_valid_after_utc,
    )
    key = rsa.generate_private_key(public_exponent=65537, key_size=USER_KEY_BITS)
    public = key.public_key()
    subject = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, "GPU Portal")]
    subject.append(x509.NameAttribute(NameOID.COMMON_NAME, user.username[:64] or "user"))
    certificate = (
        x509.CertificateBuilder()
        .subject_name(x509.Name(subject))
        .issuer_name(ca.certificate.subject)
        .public_key(public)
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=True,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=False,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(public), critical=False)
        .add_extension(
            # The CA certificate's public key, read from the CA's own (EC) key.
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca.key.public_key()),
            critical=False,
        )
        .sign(ca.key, hashes.SHA256())
    )
    record = LoginCertificate.objects.create(
        user=user,
        serial=serial_hex(certificate),
        fingerprint=fingerprint_hex(certificate),
        not_before=not_before,
        not_after=not_after,
        ssh_key_fingerprint=openssh_fingerprint(
            public.public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
        ),
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )
    # Key first, then the certificate (the layout of GPULab's own login PEMs); gpulab-cli,
    # OpenSSL and ssh -i each find the block they need.
    return IssuedLoginPem(
        certificate=record, pem=key_pem + certificate.public_bytes(serialization.Encoding.PEM)
    )


def login_certificate_revoke(
    *, certificate: LoginCertificate, user, now: datetime.datetime | None = None
) -> LoginCertificate:
    """Revoke one of ``user``'s certificates (admins may revoke anyone's). Idempotent."""
    may_manage = user.is_superuser or user.has_perm("accounts.change_logincertificate")
    if certificate.user_id != user.pk and not may_manage:
        raise NotAllowed("you can only revoke your own certificates")
    if certificate.revoked_at is None:
        certificate.revoked_at = now or timezone.now()
        LoginCertificate.objects.filter(pk=certificate.pk, revoked_at__isnull=True).update(
            revoked_at=certificate.revoked_at
        )
    return certificate


def login_certificate_list_of(user) -> QuerySet[LoginCertificate]:
    return LoginCertificate.objects.filter(user=user).order_by("-created", "-id")


def serial_hex(certificate: x509.Certificate) -> str:
    return format(certificate.serial_number, "x")


def openssh_fingerprint(line: bytes | str) -> str:
    """OpenSSH's ``SHA256:...`` fingerprint of a public key line (``ssh-rsa AAAA... comment``)."""
    if isinstance(line, str):
        line = line.encode("ascii", "replace")
    blob = base64.b64decode(line.split()[1])
    return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")


def fingerprint_hex(certificate: x509.Certificate) -> str:
    return certificate.fingerprint(hashes.SHA256()).hex()


def parse_forwarded_certificate(value: str) -> x509.Certificate:
    """The certificate in a front end's header: URL-escaped PEM (nginx's
    ``$ssl_client_escaped_cert``) or raw PEM whose line breaks became spaces or tabs."""
    text = unquote(value).strip()
    begin, end = "-----BEGIN CERTIFICATE-----", "-----END CERTIFICATE-----"
    if begin not in text or end not in text:
        raise CertificateRejected("the client certificate is not a PEM certificate")
    body = text.split(begin, 1)[1].split(end, 1)[0]
    body = "".join(body.split())  # drop spaces, tabs and newlines inside the base64
    lines = [body[i : i + 64] for i in range(0, len(body), 64)]
    pem = "\n".join([begin, *lines, end, ""]).encode("ascii", "replace")
    try:
        return x509.load_pem_x509_certificate(pem)
    except ValueError as error:
        raise CertificateRejected(f"the client certificate cannot be parsed: {error}") from None


def login_certificate_verify(
    certificate: x509.Certificate, *, now: datetime.datetime | None = None
) -> LoginCertificate:
    """The LoginCertificate (with its user) that ``certificate`` proves, or CertificateRejected.

    Checks: issued and signed by this portal's CA, inside its validity window, known serial
    with the same fingerprint, not revoked, active user, and the URN still names that user.
    """
    now = now or timezone.now()
    ca = ca_load()
    if ca is None:
        raise CertificateRejected("this portal has no certificate authority yet")
    if certificate.issuer != ca.certificate.subject:
        raise CertificateRejected("the client certificate was not issued by this portal")
    try:
        certificate.verify_directly_issued_by(ca.certificate)
    except (InvalidSignature, ValueError, TypeError) as error:
        raise CertificateRejected(
            f"the client certificate was not signed by this portal's CA ({type(error).__name__})"
        ) from None
    if now >= certificate.not_valid_after_utc:
        raise CertificateRejected("the client certificate has expired: download a new one")
    if now + CLOCK_SKEW < certificate.not_valid_before_utc:
        raise CertificateRejected("the client certificate is not valid yet")
    record = (
        LoginCertificate.objects.select_related("user")
        .filter(serial=serial_hex(certificate))
        .first()
    )
    if record is None or record.fingerprint != fingerprint_hex(certificate):
        raise CertificateRejected("the client certificate is unknown to this portal")
    if record.revoked_at is not None:
        raise CertificateRejected("the client certificate has been revoked")
    if now >= record.not_after:
        raise CertificateRejected("the client certificate has expired: download a new one")
    if not record.user.is_active:
        raise CertificateRejected("the account of this client certificate is disabled")
    if first_san_uri(certificate) != user_urn(record.user.username):
        raise CertificateRejected("the client certificate does not name its user any more")
    return record


def first_san_uri(certificate: x509.Certificate) -> str | None:
    try:
        san = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName)
    except x509.ExtensionNotFound:
        return None
    uris = san.value.get_values_for_type(x509.UniformResourceIdentifier)
    return uris[0] if uris else None
