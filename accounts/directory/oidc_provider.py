"""The OpenID Connect provider as the portal sees it: its endpoints (from the discovery document
of PORTAL_OIDC_ISSUER, fetched when first needed and kept an hour), mozilla-django-oidc's
settings derived from the PORTAL_OIDC_* settings, refresh tokens kept encrypted, and the
refresh grant the periodic sync redeems (docs/sign-in.md).
"""

from __future__ import annotations

import base64
import threading
import time
from typing import Any

import requests
from cryptography.fernet import Fernet, InvalidToken
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.shortcuts import resolve_url
from django.utils.crypto import salted_hmac
from mozilla_django_oidc.utils import import_from_settings

DISCOVERY_TTL_S = 3600
TIMEOUT_S = 10
CALLBACK_URL_NAME = "oidc-callback"

_discovery_lock = threading.Lock()
_discovery: dict[str, tuple[float, dict]] = {}  # issuer -> (fetched at, document)


class ProviderUnavailable(Exception):
    """The provider did not answer as a provider should (network, status, document)."""


def oidc_configured() -> bool:
    return bool(settings.PORTAL_OIDC_ISSUER)


def issuer() -> str:
    return settings.PORTAL_OIDC_ISSUER.rstrip("/")


def verify_tls() -> bool | str:
    """requests' ``verify``: the site's CA file for a provider with a private CA, else the
    system's trust store."""
    return settings.PORTAL_OIDC_CA_FILE or True


def provider_metadata() -> dict:
    """The provider's discovery document (cached per process for DISCOVERY_TTL_S)."""
    if not oidc_configured():
        raise ImproperlyConfigured("PORTAL_OIDC_ISSUER is not set")
    name = issuer()
    now = time.monotonic()
    with _discovery_lock:
        cached = _discovery.get(name)
        if cached is not None and now - cached[0] < DISCOVERY_TTL_S:
            return cached[1]
    url = f"{name}/.well-known/openid-configuration"
    try:
        response = requests.get(url, timeout=TIMEOUT_S, verify=verify_tls())
        response.raise_for_status()
        document = response.json()
    except (requests.RequestException, ValueError) as error:
        raise ProviderUnavailable(f"discovery document {url}: {error}") from error
    missing = [
        key
        for key in ("issuer", "authorization_endpoint", "token_endpoint", "jwks_uri")
        if not isinstance(document.get(key), str)
    ]
    if missing:
        raise ProviderUnavailable(f"discovery document {url} lacks {', '.join(missing)}")
    if document["issuer"].rstrip("/") != name:
        # OpenID Connect Discovery 1.0 section 4.3: the document must name the issuer asked.
        raise ProviderUnavailable(f"{url} names issuer {document['issuer']!r}, not {name!r}")
    with _discovery_lock:
        _discovery[name] = (now, document)
    return document


def discovery_forget() -> None:
    """Drop cached discovery documents (tests; a provider that moved its endpoints)."""
    with _discovery_lock:
        _discovery.clear()


# mozilla-django-oidc setting -> how the portal answers it
_ENDPOINTS = {
    "OIDC_OP_AUTHORIZATION_ENDPOINT": "authorization_endpoint",
    "OIDC_OP_TOKEN_ENDPOINT": "token_endpoint",
    "OIDC_OP_USER_ENDPOINT": "userinfo_endpoint",
    "OIDC_OP_JWKS_ENDPOINT": "jwks_uri",
}


def oidc_setting(attr: str, *default: Any) -> Any:
    """mozilla-django-oidc's ``get_settings``: its OIDC_* settings derived from the portal's
    (so a site sets only PORTAL_OIDC_*), anything else from Django's settings."""
    if attr in _ENDPOINTS:
        value = provider_metadata().get(_ENDPOINTS[attr])
        if not value:
            raise ProviderUnavailable(f"the provider's discovery document lacks {attr}")
        return value
    derived = {
        "OIDC_RP_CLIENT_ID": lambda: settings.PORTAL_OIDC_CLIENT_ID,
        "OIDC_RP_CLIENT_SECRET": lambda: settings.PORTAL_OIDC_CLIENT_SECRET,
        "OIDC_RP_SIGN_ALGO": lambda: settings.PORTAL_OIDC_SIGN_ALGO,
        "OIDC_RP_SCOPES": lambda: settings.PORTAL_OIDC_SCOPES,
        "OIDC_VERIFY_SSL": verify_tls,
        "OIDC_TIMEOUT": lambda: TIMEOUT_S,
        "OIDC_USE_PKCE": lambda: True,
        "OIDC_USE_NONCE": lambda: True,
        "OIDC_AUTHENTICATION_CALLBACK_URL": lambda: CALLBACK_URL_NAME,
        "OIDC_CREATE_USER": lambda: True,
        "LOGIN_REDIRECT_URL_FAILURE": lambda: resolve_url(settings.LOGIN_URL),
    }
    if attr in derived:
        return derived[attr]()
    return import_from_settings(attr, *default)


# --- refresh tokens ---------------------------------------------------------------------------


def _fernet() -> Fernet:
    key = salted_hmac("accounts.directory.refresh-token", "key", algorithm="sha256").digest()
    return Fernet(base64.urlsafe_b64encode(key))


def refresh_token_seal(token: str) -> str:
    return _fernet().encrypt(token.encode()).decode() if token else ""


def refresh_token_open(sealed: str) -> str:
    """The refresh token, or "" when none is kept or SECRET_KEY changed since it was sealed."""
    if not sealed:
        return ""
    try:
        return _fernet().decrypt(sealed.encode()).decode()
    except InvalidToken:
        return ""


class GrantRefused(Exception):
    """The provider refused the refresh grant (RFC 6749 section 5.2 ``invalid_grant``): it no
    longer vouches for the user (disabled, deleted, signed out everywhere, grant expired)."""


def refresh_grant_redeem(refresh_token: str) -> dict:
    """Redeem a refresh token at the token endpoint: the token response (access token, maybe a
    rotated refresh token). Raises GrantRefused, or ProviderUnavailable for anything else."""
    try:
        response = requests.post(
            oidc_setting("OIDC_OP_TOKEN_ENDPOINT"),
            data={
                "grant_type": "refresh_token",
                "refresh_token": refresh_token,
                "client_id": settings.PORTAL_OIDC_CLIENT_ID,
                "client_secret": settings.PORTAL_OIDC_CLIENT_SECRET,
            },
            timeout=TIMEOUT_S,
            verify=verify_tls(),
        )
    except requests.RequestException as error:
        raise ProviderUnavailable(f"token endpoint: {error}") from error
    body = _json_or_empty(response)
    if response.status_code == 400 and body.get("error") == "invalid_grant":
        raise GrantRefused(body.get("error_description") or "invalid_grant")
    if response.status_code != 200 or not body.get("access_token"):
        raise ProviderUnavailable(
            f"token endpoint answered {response.status_code}: {str(body or response.text)[:200]}"
        )
    return body


def userinfo_fetch(access_token: str) -> dict:
    """The userinfo endpoint's claims for an access token (JSON answers only)."""
    try:
        response = requests.get(
            oidc_setting("OIDC_OP_USER_ENDPOINT"),
            headers={"Authorization": f"Bearer {access_token}"},
            timeout=TIMEOUT_S,
            verify=verify_tls(),
        )
        response.raise_for_status()
        claims = response.json()
    except (requests.RequestException, ValueError) as error:
        raise ProviderUnavailable(f"userinfo endpoint: {error}") from error
    if not isinstance(claims, dict):
        raise ProviderUnavailable("userinfo endpoint: not a JSON object")
    return claims


def _json_or_empty(response) -> dict:
    try:
        body = response.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}
