"""DRF authentication by a login certificate that the TLS front end verified.

The TLS front end (nginx, see docs/tls-frontend.md) checks the client certificate against the
portal CA and, only when that succeeded, passes it to Django in ``X-SSL-Client-Cert``
(``settings.PORTAL_CLIENT_CERT_HEADER``). The header is believed only when the request comes
from an address in ``settings.PORTAL_TRUSTED_PROXIES``; from anywhere else it is ignored (a
client could type it). The certificate is then checked again here (signature by the portal CA,
validity, known serial, not revoked), so a revoked or expired certificate stops working at once.

Like TokenAuthentication, a certificate login needs no CSRF token: gpulab-cli is not a browser.
Browsers can present client certificates too, and do so automatically, so a request that
carries browser markers (``Origin`` or ``Sec-Fetch-Site``) goes through Django's CSRF check
exactly as a session login would.

This class is listed LAST in REST_FRAMEWORK's DEFAULT_AUTHENTICATION_CLASSES: a browser session
or an API token keeps its meaning and the 401/403 behaviour DRF derives from the first class is
unchanged; a certificate only matters for requests that bring neither.
"""

import logging

from django.conf import settings
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication, SessionAuthentication

from portal.certs.services import (
    CertificateRejected,
    login_certificate_verify,
    parse_forwarded_certificate,
)

log = logging.getLogger(__name__)


def forwarded_certificate_header(request) -> str | None:
    """The front end's certificate header of a Django request, or None when absent or when
    the request does not come from a trusted proxy (then it is ignored, with a warning)."""
    value = request.META.get(settings.PORTAL_CLIENT_CERT_HEADER, "")
    if not value or not value.strip():
        return None
    remote = request.META.get("REMOTE_ADDR", "")
    if remote not in settings.PORTAL_TRUSTED_PROXIES:
        log.warning("ignoring a client certificate header sent by untrusted address %r", remote)
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
