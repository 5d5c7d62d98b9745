"""DRF authentication by a login certificate that the TLS front end verified.

The TLS front end (nginx, see docs/tls-frontend.md) checks the client certificate against the
portal CA and, only when that succeeded, passes it to Django in ``X-SSL-Client-Cert``
(``settings.PORTAL_CLIENT_CERT_HEADER``). The header is believed only when the request comes
from an address in ``settings.PORTAL_TRUSTED_PROXIES`` AND carries the front end's shared
secret in ``X-Portal-Frontend-Secret``; otherwise it is ignored (a client could type it, and a
certificate is public: any local process can reach the app port from 127.0.0.1, but only nginx
knows the secret). With no secret configured, certificate headers are ignored altogether.
The certificate is then checked again here (signature by the portal CA, validity, known serial,
not revoked), so a revoked or expired certificate stops working at once.

Like TokenAuthentication, a certificate login needs no CSRF token: gpulab-cli is not a browser.
Browsers can present client certificates too, and do so automatically, so a request that
carries browser markers (``Origin`` or ``Sec-Fetch-Site``) goes through Django's CSRF check
exactly as a session login would.

This class is listed LAST in REST_FRAMEWORK's DEFAULT_AUTHENTICATION_CLASSES: a browser session
or an API token keeps its meaning and the 401/403 behaviour DRF derives from the first class is
unchanged; a certificate only matters for requests that bring neither.
"""

import hmac
import logging
import threading

from django.conf import settings
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication, SessionAuthentication

from accounts.certs.services import (
    CertificateRejected,
    login_certificate_verify,
    parse_forwarded_certificate,
)

log = logging.getLogger(__name__)


# The secret file is read when it changes (scripts/tls-frontend.sh may write it after the
# portal started); (path, mtime_ns, size) -> secret.
_secret_cache: dict = {}
_secret_lock = threading.Lock()
_warned_no_secret = False
MIN_SECRET_LENGTH = 16


def frontend_secret() -> str | None:
    """The shared secret nginx sends with every request, or None when none is configured
    (or it is shorter than MIN_SECRET_LENGTH). Never logged."""
    secret = (settings.PORTAL_FRONTEND_SECRET or "").strip()
    if not secret:
        path = settings.PORTAL_FRONTEND_SECRET_FILE
        try:
            stat = path.stat()
        except OSError:
            return None
        key = (str(path), stat.st_mtime_ns, stat.st_size)
        with _secret_lock:
            if key not in _secret_cache:
                try:
                    text = path.read_text().strip()
                except OSError:
                    return None
                _secret_cache.clear()
                _secret_cache[key] = text
            secret = _secret_cache[key]
    return secret if len(secret) >= MIN_SECRET_LENGTH else None


def _warn_no_secret_once() -> None:
    global _warned_no_secret
    if not _warned_no_secret:
        _warned_no_secret = True
        log.warning(
            "ignoring client certificate headers: no front-end secret is configured "
            "(PORTAL_FRONTEND_SECRET or the file %s; see docs/tls-frontend.md)",
            settings.PORTAL_FRONTEND_SECRET_FILE,
        )


def forwarded_certificate_header(request) -> str | None:
    """The front end's certificate header of a Django request, or None when absent, when the
    request does not come from a trusted proxy, or when it lacks the front end's secret (then
    it is ignored, with a warning that never shows the secret)."""
    value = request.META.get(settings.PORTAL_CLIENT_CERT_HEADER, "")
    if not value or not value.strip():
        return None
    remote = request.META.get("REMOTE_ADDR", "")
    if remote not in settings.PORTAL_TRUSTED_PROXIES:
        log.warning("ignoring a client certificate header sent by untrusted address %r", remote)
        return None
    secret = frontend_secret()
    if secret is None:
        _warn_no_secret_once()
        return None
    given = request.META.get(settings.PORTAL_FRONTEND_SECRET_HEADER, "")
    if not hmac.compare_digest(given.encode(), secret.encode()):
        why = "a wrong" if given else "no"
        log.warning(
            "ignoring a client certificate header from %r with %s front-end secret", remote, why
        )
        return None
    return value


def authenticate_client_certificate(request):
    """(user, LoginCertificate) for a Django request carrying a verified login certificate,
    None without one; raises CertificateRejected for a certificate that must not log in.

    For plain Django views; DRF views get the same through ClientCertificateAuthentication."""
    value = forwarded_certificate_header(request)
    if value is None:
        return None
    record = login_certificate_verify(parse_forwarded_certificate(value))
    return record.user, record


def _looks_like_browser(request) -> bool:
    meta = request.META
    return bool(meta.get("HTTP_ORIGIN") or meta.get("HTTP_SEC_FETCH_SITE"))


class ClientCertificateAuthentication(BaseAuthentication):
    """Authenticates gpulab-cli (and any TLS client) by its portal login certificate."""

    def authenticate(self, request):
        try:
            result = authenticate_client_certificate(request._request)
        except CertificateRejected as rejected:
            raise exceptions.AuthenticationFailed(str(rejected)) from None
        if result is None:
            return None
        if _looks_like_browser(request):
            # Raises PermissionDenied for an unsafe request without a valid CSRF token.
            SessionAuthentication().enforce_csrf(request)
        return result


class ClientCertificateScheme(OpenApiAuthenticationExtension):
    """The OpenAPI security scheme of ClientCertificateAuthentication (``GET /api/schema``)."""

    target_class = ClientCertificateAuthentication
    name = "loginCertificate"

    def get_security_definition(self, auto_schema):
        return {
            "type": "mutualTLS",
            "description": "The portal login certificate (the PEM gpulab-cli uses), presented "
            "in the TLS handshake with the portal's front end (docs/tls-frontend.md).",
        }
