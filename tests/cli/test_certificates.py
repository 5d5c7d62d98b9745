"""Portal CA, login PEMs, the certificate authentication class and the certificate pages."""

import datetime
import os
import stat
from urllib.parse import quote

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID
from django.test import override_settings
from django.urls import path, reverse
from django.utils import timezone
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.certs import ca as ca_module
from accounts.certs.authentication import ClientCertificateAuthentication
from accounts.certs.services import (
    first_san_uri,
    login_certificate_issue,
    login_certificate_revoke,
)
from accounts.models import LoginCertificate, user_urn

HEADER = "HTTP_X_SSL_CLIENT_CERT"
SECRET_HEADER = "HTTP_X_PORTAL_FRONTEND_SECRET"
SECRET = "test-frontend-secret-0123456789abcdef"


def via_nginx(value: str, *, secret: str | None = SECRET) -> dict:
    """The headers nginx sends: the escaped certificate and the front end's shared secret."""
    headers = {HEADER: value}
    if secret is not None:
        headers[SECRET_HEADER] = secret
    return headers


@pytest.fixture(autouse=True)
def frontend_secret(settings):
    settings.PORTAL_FRONTEND_SECRET = SECRET
    return SECRET


# --- a tiny DRF endpoint using the project's default authentication classes ------------------


class WhoAmI(APIView):
    def get(self, request):
        return Response({"user": request.user.username, "auth": type(request.auth).__name__})

    def post(self, request):
        return Response({"user": request.user.username})


urlpatterns = [path("whoami/", WhoAmI.as_view())]


def certificate_of(pem: bytes) -> x509.Certificate:
    return x509.load_pem_x509_certificate(pem)


def header_value(pem_or_cert) -> str:
    """What nginx's $ssl_client_escaped_cert puts in the header: the URL-escaped PEM."""
    if isinstance(pem_or_cert, x509.Certificate):
        pem = pem_or_cert.public_bytes(serialization.Encoding.PEM)
    else:
        pem = pem_or_cert
    return quote(certificate_of(pem).public_bytes(serialization.Encoding.PEM).decode(), safe="")


@pytest.fixture
def whoami_urls(settings):
    settings.ROOT_URLCONF = __name__


@pytest.fixture
def api(whoami_urls):
    from rest_framework.test import APIClient

    return APIClient()


# --- CA ---------------------------------------------------------------------------------------


def test_ca_is_created_once_with_a_private_key_file(settings):
    first, created = ca_module.ca_get_or_create()
    assert created
    key_path = settings.PORTAL_CA_DIR / "ca.key"
    assert stat.S_IMODE(os.stat(key_path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(settings.PORTAL_CA_DIR).st_mode) == 0o700
    assert first.cert_path == settings.PORTAL_CA_DIR / "ca.pem"
    basic = first.certificate.extensions.get_extension_for_class(x509.BasicConstraints).value
    assert basic.ca is True
    again, created_again = ca_module.ca_get_or_create()
    assert not created_again
    assert again.fingerprint == first.fingerprint


def test_ca_init_command(settings, capsys):
    from django.core.management import call_command

    call_command("ca_init")
    assert "Portal CA created" in capsys.readouterr().out
    call_command("ca_init", "--print-cert-path")
    assert capsys.readouterr().out.strip() == str(settings.PORTAL_CA_DIR / "ca.pem")
    call_command("ca_init")
    assert "Portal CA exists" in capsys.readouterr().out


def test_no_ca_until_first_use(settings):
    assert ca_module.ca_load() is None
    assert not settings.PORTAL_CA_DIR.exists()


# --- login PEM --------------------------------------------------------------------------------


def test_login_pem_contents(member, settings):
    settings.PORTAL_CERT_VALID_DAYS = 30
    now = timezone.now()
    issued = login_certificate_issue(user=member, now=now)
    pem = issued.pem
    # key + certificate in one file
    key = serialization.load_pem_private_key(pem, password=None)
    assert isinstance(key, rsa.RSAPrivateKey) and key.key_size >= 2048
    cert = certificate_of(pem)
    assert cert.public_key().public_numbers() == key.public_key().public_numbers()
    # what gpulab-cli reads: first SAN URI = URN, first RFC822 name = e-mail
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.UniformResourceIdentifier)[0] == user_urn("alice")
    assert san.get_values_for_type(x509.RFC822Name)[0] == "alice@example.org"
    assert first_san_uri(cert) == "urn:publicid:IDN+gpuportal.local+user+alice"
    # validity
    assert cert.not_valid_before_utc <= now
    lifetime = cert.not_valid_after_utc - now
    assert abs(lifetime - datetime.timedelta(days=30)) < datetime.timedelta(seconds=1)
    # signed by the portal CA, for client authentication
    ca = ca_module.ca_get()
    cert.verify_directly_issued_by(ca.certificate)
    eku = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH in eku
    # stored (no key)
    record = LoginCertificate.objects.get()
    assert record == issued.certificate
    assert record.user == member
    assert record.serial == format(cert.serial_number, "x")
    assert record.fingerprint == cert.fingerprint(hashes.SHA256()).hex()
    assert abs(record.not_after - cert.not_valid_after_utc) < datetime.timedelta(seconds=1)
    assert record.revoked_at is None
    assert record.state_at(now) == "valid"


def test_each_download_is_a_new_key_pair(member):
    a = login_certificate_issue(user=member)
    b = login_certificate_issue(user=member)
    assert a.certificate.serial != b.certificate.serial
    assert a.pem != b.pem


def test_user_without_email_gets_the_hidden_address(make_user):
    """gpulab-cli fails every submit when the PEM has no address (issue 15): GPULab's hidden
    placeholder stands in, and notifications never go to it."""
    user = make_user("carol")
    user.email = ""
    user.save()
    cert = certificate_of(login_certificate_issue(user=user).pem)
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.RFC822Name) == ["hidden@hidden.hidden"]
    assert san.get_values_for_type(x509.UniformResourceIdentifier) == [user_urn("carol")]


# --- authentication class ---------------------------------------------------------------------


def test_authentication_class_is_configured_last(settings):
    classes = settings.REST_FRAMEWORK["DEFAULT_AUTHENTICATION_CLASSES"]
    assert classes[-1] == "accounts.certs.authentication.ClientCertificateAuthentication"
    assert "rest_framework.authentication.SessionAuthentication" in classes


def test_valid_certificate_from_trusted_proxy_logs_in(api, member):
    issued = login_certificate_issue(user=member)
    response = api.get("/whoami/", **via_nginx(header_value(issued.pem)), REMOTE_ADDR="127.0.0.1")
    assert response.status_code == 200
    assert response.json() == {"user": "alice", "auth": "LoginCertificate"}


def test_raw_pem_with_spaces_is_accepted(api, member):
    pem = certificate_of(login_certificate_issue(user=member).pem).public_bytes(
        serialization.Encoding.PEM
    )
    flattened = pem.decode().replace("\n", " ")
    response = api.get("/whoami/", **via_nginx(flattened))
    assert response.status_code == 200
    assert response.json()["user"] == "alice"


def test_post_needs_no_csrf_token_like_a_token_login(whoami_urls, member):
    from rest_framework.test import APIClient

    client = APIClient(enforce_csrf_checks=True)
    issued = login_certificate_issue(user=member)
    response = client.post("/whoami/", {}, format="json", **via_nginx(header_value(issued.pem)))
    assert response.status_code == 200
    assert response.json() == {"user": "alice"}


def test_browser_request_with_certificate_still_needs_csrf(whoami_urls, member):
    from rest_framework.test import APIClient

    client = APIClient(enforce_csrf_checks=True)
    issued = login_certificate_issue(user=member)
    response = client.post(
        "/whoami/",
        {},
        format="json",
        HTTP_ORIGIN="https://evil.example",
        **via_nginx(header_value(issued.pem)),
    )
    assert response.status_code == 403
    assert "CSRF" in response.json()["error"]


@override_settings(PORTAL_TRUSTED_PROXIES=["10.1.2.3"])
def test_header_from_untrusted_address_is_ignored(api, member):
    issued = login_certificate_issue(user=member)
    forged = via_nginx(header_value(issued.pem))
    response = api.get("/whoami/", **forged, REMOTE_ADDR="127.0.0.1")
    assert response.status_code in (401, 403)
    assert response.json()["error"] == "Authentication credentials were not provided."
    # ... and from the trusted proxy it works
    response = api.get("/whoami/", **forged, REMOTE_ADDR="10.1.2.3")
    assert response.status_code == 200


def test_forged_header_from_a_client_is_ignored(api, member):
    issued = login_certificate_issue(user=member)
    response = api.get("/whoami/", **via_nginx(header_value(issued.pem)), REMOTE_ADDR="192.0.2.7")
    assert response.status_code in (401, 403)


@pytest.mark.parametrize(
    "secret", [None, "", "wrong-secret-of-the-same-kind-0123", SECRET[:-1], SECRET + "x"]
)
def test_header_from_loopback_without_the_right_secret_is_ignored(api, member, secret, caplog):
    """Any local process can reach the app port from 127.0.0.1; only nginx knows the secret."""
    issued = login_certificate_issue(user=member)
    headers = via_nginx(header_value(issued.pem), secret=secret)
    response = api.get("/whoami/", **headers, REMOTE_ADDR="127.0.0.1")
    assert response.status_code in (401, 403)
    assert response.json()["error"] == "Authentication credentials were not provided."
    assert "front-end secret" in caplog.text
    assert SECRET not in caplog.text
    response = api.get("/whoami/", **via_nginx(header_value(issued.pem)), REMOTE_ADDR="127.0.0.1")
    assert response.status_code == 200 and response.json()["user"] == "alice"


def test_without_a_configured_secret_certificate_headers_are_ignored(
    api, member, settings, tmp_path, caplog
):
    from accounts.certs import authentication

    settings.PORTAL_FRONTEND_SECRET = ""
    settings.PORTAL_FRONTEND_SECRET_FILE = tmp_path / "absent"
    authentication._warned_no_secret = False
    issued = login_certificate_issue(user=member)
    for _ in range(2):
        response = api.get("/whoami/", **via_nginx(header_value(issued.pem)))
        assert response.status_code in (401, 403)
    # logged once, not per request
    assert caplog.text.count("no front-end secret is configured") == 1


def test_too_short_a_secret_counts_as_none(api, member, settings):
    settings.PORTAL_FRONTEND_SECRET = "short"
    issued = login_certificate_issue(user=member)
    response = api.get("/whoami/", **via_nginx(header_value(issued.pem), secret="short"))
    assert response.status_code in (401, 403)


def test_secret_file_is_read_when_it_appears_and_when_it_changes(api, member, settings, tmp_path):
    """scripts/tls-frontend.sh may write the file after the portal started."""
    settings.PORTAL_FRONTEND_SECRET = ""
    path = tmp_path / "frontend-secret"
    settings.PORTAL_FRONTEND_SECRET_FILE = path
    issued = login_certificate_issue(user=member)
    first, second = "a" * 40, "b" * 41  # another size: a new mtime alone may be coarse
    assert api.get("/whoami/", **via_nginx(header_value(issued.pem), secret=first)).status_code in (
        401,
        403,
    )
    path.write_text(first + "\n")
    assert (
        api.get("/whoami/", **via_nginx(header_value(issued.pem), secret=first)).status_code == 200
    )
    path.write_text(second + "\n")
    assert api.get("/whoami/", **via_nginx(header_value(issued.pem), secret=first)).status_code in (
        401,
        403,
    )
    assert (
        api.get("/whoami/", **via_nginx(header_value(issued.pem), secret=second)).status_code == 200
    )


def test_without_certificate_session_and_token_still_work(api, member):
    from accounts.tokens import api_token_rotate

    assert api.get("/whoami/").status_code in (401, 403)
    _, key = api_token_rotate(user=member)
    response = api.get("/whoami/", HTTP_AUTHORIZATION=f"Token {key}")
    assert response.status_code == 200 and response.json()["user"] == "alice"
    api.force_login(member)
    response = api.get("/whoami/")
    assert response.status_code == 200 and response.json()["user"] == "alice"


def test_revoked_certificate_is_refused_at_once(api, member):
    issued = login_certificate_issue(user=member)
    headers = via_nginx(header_value(issued.pem))
    assert api.get("/whoami/", **headers).status_code == 200
    login_certificate_revoke(certificate=issued.certificate, user=member)
    response = api.get("/whoami/", **headers)
    assert response.status_code in (401, 403)
    assert "revoked" in response.json()["error"]


def test_expired_certificate_is_refused(api, member, settings):
    settings.PORTAL_CERT_VALID_DAYS = 1
    issued = login_certificate_issue(user=member, now=timezone.now() - datetime.timedelta(days=3))
    response = api.get("/whoami/", **via_nginx(header_value(issued.pem)))
    assert response.status_code in (401, 403)
    assert "expired" in response.json()["error"]


def test_expired_in_database_is_refused(api, member):
    """The stored not_after is authoritative too (an admin may shorten it)."""
    issued = login_certificate_issue(user=member)
    LoginCertificate.objects.update(not_after=timezone.now() - datetime.timedelta(seconds=1))
    response = api.get("/whoami/", **via_nginx(header_value(issued.pem)))
    assert response.status_code in (401, 403)


def _foreign_certificate(subject_like: x509.Certificate, *, serial: int | None = None):
    """A certificate with the same names, signed by another CA with the portal CA's name."""
    foreign_key = ec.generate_private_key(ec.SECP256R1())
    user_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject_like.subject)
        .issuer_name(subject_like.issuer)  # pretends to be from the portal CA
        .public_key(user_key.public_key())
        .serial_number(serial or subject_like.serial_number)
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            subject_like.extensions.get_extension_for_class(x509.SubjectAlternativeName).value,
            critical=False,
        )
        .sign(foreign_key, hashes.SHA256())
    )


def test_foreign_ca_certificate_is_refused(api, member):
    genuine = certificate_of(login_certificate_issue(user=member).pem)
    forged = _foreign_certificate(genuine)  # even with a known serial
    response = api.get("/whoami/", **via_nginx(header_value(forged)))
    assert response.status_code in (401, 403)
    assert "signed" in response.json()["error"]


def test_certificate_from_an_unrelated_ca_is_refused(api, member):
    login_certificate_issue(user=member)  # the portal CA exists
    other_key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Someone else's CA")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "alice")]))
        .issuer_name(name)
        .public_key(other_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=1))
        .sign(other_key, hashes.SHA256())
    )
    response = api.get("/whoami/", **via_nginx(header_value(cert)))
    assert response.status_code in (401, 403)
    assert "not issued by this portal" in response.json()["error"]


def test_unknown_serial_is_refused(api, member):
    issued = login_certificate_issue(user=member)
    LoginCertificate.objects.all().delete()
    response = api.get("/whoami/", **via_nginx(header_value(issued.pem)))
    assert response.status_code in (401, 403)
    assert "unknown" in response.json()["error"]


def test_garbage_header_is_refused(api, member):
    response = api.get("/whoami/", **via_nginx("not a certificate"))
    assert response.status_code in (401, 403)


def test_inactive_user_is_refused(api, member):
    issued = login_certificate_issue(user=member)
    member.is_active = False
    member.save()
    response = api.get("/whoami/", **via_nginx(header_value(issued.pem)))
    assert response.status_code in (401, 403)


def test_renamed_user_certificate_stops_working(api, member):
    issued = login_certificate_issue(user=member)
    member.username = "alice2"
    member.save()
    response = api.get("/whoami/", **via_nginx(header_value(issued.pem)))
    assert response.status_code in (401, 403)


def test_session_wins_over_a_certificate_of_someone_else(api, member, outsider):
    """A browser session keeps its meaning; the certificate class comes last."""
    issued = login_certificate_issue(user=outsider)
    api.force_login(member)
    response = api.get("/whoami/", **via_nginx(header_value(issued.pem)))
    assert response.json()["user"] == "alice"


def test_authenticate_header_helper_for_plain_views(rf, member):
    from accounts.certs.authentication import authenticate_client_certificate

    issued = login_certificate_issue(user=member)
    request = rf.get("/", **via_nginx(header_value(issued.pem)))
    user, record = authenticate_client_certificate(request)
    assert user == member and record == issued.certificate
    assert authenticate_client_certificate(rf.get("/")) is None


def test_class_can_be_used_alone(rf, member):
    issued = login_certificate_issue(user=member)
    from rest_framework.request import Request

    request = Request(rf.get("/", **via_nginx(header_value(issued.pem))))
    user, record = ClientCertificateAuthentication().authenticate(request)
    assert user == member


# --- pages ------------------------------------------------------------------------------------


def test_pages_need_login(client):
    for url, method in [
        (reverse("certs:list"), "get"),
        (reverse("certs:download"), "post"),
        (reverse("certs:revoke", args=[1]), "post"),
    ]:
        response = getattr(client, method)(url)
        assert response.status_code == 302
        assert response["Location"].startswith(reverse("login"))


def test_download_gives_a_login_pem(client, member):
    client.force_login(member)
    response = client.post(reverse("certs:download"))
    assert response.status_code == 200
    assert response["Content-Type"] == "application/x-pem-file"
    assert 'filename="gpuportal-login-alice.pem"' in response["Content-Disposition"]
    assert response["Cache-Control"] == "no-store"
    pem = response.content
    assert b"PRIVATE KEY-----" in pem and b"BEGIN CERTIFICATE" in pem
    assert first_san_uri(certificate_of(pem)) == user_urn("alice")
    assert LoginCertificate.objects.filter(user=member).count() == 1


def test_download_needs_post(client, member):
    client.force_login(member)
    assert client.get(reverse("certs:download")).status_code == 405


def test_list_shows_only_own_certificates(client, member, outsider):
    mine = login_certificate_issue(user=member).certificate
    theirs = login_certificate_issue(user=outsider).certificate
    client.force_login(member)
    response = client.get(reverse("certs:list"))
    assert response.status_code == 200
    body = response.content.decode()
    assert mine.fingerprint[:20] in body
    assert theirs.fingerprint[:20] not in body
    assert user_urn("alice") in body
    assert "Download a new login PEM" in body


def test_revoke_own_certificate(client, member):
    cert = login_certificate_issue(user=member).certificate
    client.force_login(member)
    response = client.post(reverse("certs:revoke", args=[cert.pk]))
    assert response.status_code == 302
    cert.refresh_from_db()
    assert cert.revoked_at is not None
    body = client.get(reverse("certs:list")).content.decode()
    assert "revoked" in body


def test_cannot_revoke_someone_elses_certificate(client, member, outsider):
    theirs = login_certificate_issue(user=outsider).certificate
    client.force_login(member)
    response = client.post(reverse("certs:revoke", args=[theirs.pk]))
    assert response.status_code == 404
    theirs.refresh_from_db()
    assert theirs.revoked_at is None


def test_revoke_needs_csrf_token(member):
    from django.test import Client

    cert = login_certificate_issue(user=member).certificate
    client = Client(enforce_csrf_checks=True)
    client.force_login(member)
    response = client.post(reverse("certs:revoke", args=[cert.pk]))
    assert response.status_code == 403
    cert.refresh_from_db()
    assert cert.revoked_at is None


def test_admin_lists_and_revokes_certificates(client, admin_user, member):
    cert = login_certificate_issue(user=member).certificate
    client.force_login(admin_user)
    url = reverse("admin:accounts_logincertificate_changelist")
    page = client.get(url)
    assert page.status_code == 200
    assert cert.serial in page.content.decode()
    response = client.post(url, {"action": "revoke", "_selected_action": [cert.pk]})
    assert response.status_code == 302
    cert.refresh_from_db()
    assert cert.revoked_at is not None


def test_revoke_service_refuses_other_users(member, outsider):
    from core.errors import NotAllowed

    cert = login_certificate_issue(user=member).certificate
    with pytest.raises(NotAllowed):
        login_certificate_revoke(certificate=cert, user=outsider)
    cert.refresh_from_db()
    assert cert.revoked_at is None
