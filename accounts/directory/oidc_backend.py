"""OpenID Connect sign-in with mozilla-django-oidc (authorization code flow with PKCE and a
nonce), configured by the PORTAL_OIDC_* settings (accounts/directory/oidc_provider.py).

mozilla-django-oidc runs the flow: the redirect to the provider, the state, nonce and PKCE
checks, the code exchange and the ID token's signature (the provider's JWKS). The portal adds:
the ID token's audience and issuer checked, the user found by the provider's ``sub`` (never by
e-mail or name), made or updated from the claims (PORTAL_OIDC_USERNAME_CLAIM, email,
given_name, family_name) with the groups claim (PORTAL_OIDC_GROUPS_CLAIM) mapped to projects,
and the refresh token kept for the periodic sync.
"""

from __future__ import annotations

import logging

import requests
from django.conf import settings
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.core.exceptions import SuspiciousOperation
from django.http import Http404
from django.shortcuts import redirect
from django.views.generic import View
from mozilla_django_oidc.auth import OIDCAuthenticationBackend
from mozilla_django_oidc.views import (
    OIDCAuthenticationCallbackView,
    OIDCAuthenticationRequestView,
)

from accounts.directory.mapping import DirectoryGroup
from accounts.directory.oidc_provider import (
    ProviderUnavailable,
    issuer,
    oidc_configured,
    oidc_setting,
    refresh_token_seal,
)
from accounts.directory.services import DirectoryPerson, SignInRefused, directory_user_sign_in
from accounts.models import DirectoryChange, DirectoryIdentity

log = logging.getLogger(__name__)
SOURCE = DirectoryIdentity.Source.OIDC
UNAVAILABLE = "The identity provider did not answer; try again later."


def person_from_claims(claims: dict) -> DirectoryPerson:
    """The person an ID token and userinfo describe (the userinfo's claims win)."""
    subject = claims.get("sub")
    if not isinstance(subject, str) or not subject:
        raise SuspiciousOperation("the provider's claims have no sub")
    username = claims.get(settings.PORTAL_OIDC_USERNAME_CLAIM)
    groups = claims.get(settings.PORTAL_OIDC_GROUPS_CLAIM) or []
    if isinstance(groups, str):
        groups = [groups]

    def text(name: str) -> str:
        value = claims.get(name)
        return value if isinstance(value, str) else ""

    return DirectoryPerson(
        source=SOURCE,
        subject=subject,
        username=username if isinstance(username, str) else "",
        email=text("email"),
        first_name=text("given_name"),
        last_name=text("family_name"),
        groups=tuple(DirectoryGroup(name=str(g)) for g in groups if isinstance(g, str | int)),
    )


class PortalOIDCBackend(OIDCAuthenticationBackend):
    """mozilla-django-oidc's backend with the portal's settings and identities. Endpoints are
    read from the provider only when an OIDC sign-in happens: a password sign-in (which asks
    every backend) never waits for the provider."""

    get_settings = staticmethod(oidc_setting)

    def __init__(self, *args, **kwargs):
        self.UserModel = get_user_model()
        self.refresh_token = ""

    # The attributes mozilla-django-oidc's methods read, answered when read.
    OIDC_OP_TOKEN_ENDPOINT = property(lambda self: oidc_setting("OIDC_OP_TOKEN_ENDPOINT"))
    OIDC_OP_USER_ENDPOINT = property(lambda self: oidc_setting("OIDC_OP_USER_ENDPOINT"))
    OIDC_OP_JWKS_ENDPOINT = property(lambda self: oidc_setting("OIDC_OP_JWKS_ENDPOINT"))
    OIDC_RP_CLIENT_ID = property(lambda self: oidc_setting("OIDC_RP_CLIENT_ID"))
    OIDC_RP_CLIENT_SECRET = property(lambda self: oidc_setting("OIDC_RP_CLIENT_SECRET"))
    OIDC_RP_SIGN_ALGO = property(lambda self: oidc_setting("OIDC_RP_SIGN_ALGO"))
    OIDC_RP_IDP_SIGN_KEY = None  # the provider's keys come from its JWKS

    def authenticate(self, request, **kwargs):
        if not oidc_configured() or request is None or "code" not in request.GET:
            return None
        try:
            return super().authenticate(request, **kwargs)
        except (ProviderUnavailable, requests.RequestException) as error:
            log.warning("OIDC sign-in failed: %s", error)
            _failure_say(request, UNAVAILABLE)
            return None

    def get_user(self, user_id):
        # A session outlives nothing: a user made inactive is signed out at the next request.
        user = super().get_user(user_id)
        return user if user is not None and user.is_active else None

    def get_token(self, payload):
        token_info = super().get_token(payload)
        self.refresh_token = token_info.get("refresh_token") or ""
        return token_info

    def verify_token(self, token, **kwargs):
        """mozilla-django-oidc checks the signature, expiry and nonce; the audience and the
        issuer are checked here (OpenID Connect Core 3.1.3.7)."""
        return self._audience_and_issuer_checked(super().verify_token(token, **kwargs))

    def id_token_verify(self, token: str) -> dict:
        """An ID token of a refresh (no nonce to compare): signature, expiry, audience, issuer."""
        key = (
            self.retrieve_matching_jwk(token)
            if self.OIDC_RP_SIGN_ALGO[:2] in ("RS", "ES")
            else (self.OIDC_RP_CLIENT_SECRET)
        )
        return self._audience_and_issuer_checked(self.get_payload_data(token, key))

    def _audience_and_issuer_checked(self, payload: dict) -> dict:
        audience = payload.get("aud")
        audiences = [audience] if isinstance(audience, str) else list(audience or [])
        if self.OIDC_RP_CLIENT_ID not in audiences:
            raise SuspiciousOperation("the ID token is meant for another client")
        if str(payload.get("iss", "")).rstrip("/") != issuer():
            raise SuspiciousOperation("the ID token comes from another issuer")
        return payload

    def get_or_create_user(self, access_token, id_token, payload):
        userinfo = self.get_userinfo(access_token, id_token, payload)
        if userinfo.get("sub") != payload.get("sub"):
            raise SuspiciousOperation("the userinfo answer is about another subject")
        person = person_from_claims({**payload, **userinfo})
        try:
            user = directory_user_sign_in(person=person, trigger=DirectoryChange.Trigger.SIGN_IN)
        except SignInRefused as refused:
            _failure_say(self.request, f"Sign-in refused: {refused}")
            raise SuspiciousOperation(str(refused)) from None
        DirectoryIdentity.objects.filter(user=user).update(
            refresh_token=refresh_token_seal(self.refresh_token)
        )
        return user


def _failure_say(request, text: str) -> None:
    """Tell the person why the sign-in failed (once: the callback adds a general line only when
    nothing more precise was said)."""
    request.portal_signin_failure_said = True
    messages.error(request, text)


class _OnlyWhenConfigured:
    """404 when OIDC is off; back to the sign-in page when the provider cannot be reached."""

    def dispatch(self, request, *args, **kwargs):
        if not oidc_configured():
            raise Http404("OpenID Connect sign-in is not configured")
        try:
            return super().dispatch(request, *args, **kwargs)  # type: ignore[misc]
        except ProviderUnavailable as error:
            log.warning("OIDC sign-in failed: %s", error)
            _failure_say(request, UNAVAILABLE)
            return redirect(settings.LOGIN_URL)


class SignInStartView(_OnlyWhenConfigured, OIDCAuthenticationRequestView):
    """GET /oidc/authenticate/?next=...: off to the provider."""

    get_settings = staticmethod(oidc_setting)

    def __init__(self, *args, **kwargs):
        # Not mozilla-django-oidc's __init__: it reads the endpoints, which are answered below
        # when the request is served (a provider down is then a message, not a 500).
        View.__init__(self, *args, **kwargs)

    OIDC_OP_AUTH_ENDPOINT = property(lambda self: oidc_setting("OIDC_OP_AUTHORIZATION_ENDPOINT"))
    OIDC_RP_CLIENT_ID = property(lambda self: oidc_setting("OIDC_RP_CLIENT_ID"))


class SignInCallbackView(_OnlyWhenConfigured, OIDCAuthenticationCallbackView):
    """GET /oidc/callback/?code=...&state=...: back from the provider."""

    get_settings = staticmethod(oidc_setting)

    def login_failure(self):
        if not getattr(self.request, "portal_signin_failure_said", False):
            _failure_say(
                self.request, f"Sign-in with {settings.PORTAL_OIDC_LABEL} did not succeed."
            )
        return super().login_failure()
