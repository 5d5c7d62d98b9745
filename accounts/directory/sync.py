"""The periodic check of directory users (the django-q2 schedule "sync directory users" and
``manage.py directory_sync``): is each user still vouched for by their directory?

- LDAP: the user is looked up with the service account; found, their details, groups and
  memberships are updated (and a user the directory had disabled is enabled again); not found,
  they are made inactive.
- OpenID Connect: the refresh token kept from their last sign-in is redeemed at the provider's
  token endpoint; refused (``invalid_grant``: disabled, deleted, grant revoked or lapsed), they
  are made inactive until they sign in again; granted, the userinfo (and the new ID token)
  update their details and, where the answer carries the groups claim, their memberships.
  Users who signed in without a refresh token cannot be checked here (counted "unchecked").

A directory that does not answer changes nothing and ends the pass. Users are visited least
recently checked first, and a pass stops at its deadline (the task's fits django-q2's time
limit); the next pass goes on where it stopped.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from dataclasses import replace

from django.conf import settings
from django.core.exceptions import SuspiciousOperation
from django.db.models import F, Q

from accounts.directory.ldap_backend import ldap_configured, ldap_identity_check
from accounts.directory.oidc_backend import PortalOIDCBackend, person_from_claims
from accounts.directory.oidc_provider import (
    GrantRefused,
    ProviderUnavailable,
    oidc_configured,
    refresh_grant_redeem,
    refresh_token_open,
    refresh_token_seal,
    userinfo_fetch,
)
from accounts.directory.services import (
    SignInRefused,
    directory_user_disable,
    directory_user_sign_in,
)
from accounts.models import DirectoryChange, DirectoryIdentity

log = logging.getLogger(__name__)
SYNC = DirectoryChange.Trigger.SYNC
TASK_DEADLINE_S = 45.0  # below Q_CLUSTER's 60 s task time limit


def _due(source: str):
    """Identities worth asking about: active users, and users the directory disabled (who may
    be back); not users an admin made inactive."""
    return (
        DirectoryIdentity.objects.filter(source=source)
        .filter(Q(user__is_active=True) | Q(disabled_at__isnull=False))
        .order_by(F("last_checked").asc(nulls_first=True), "pk")
    )


def directory_sync(*, deadline_s: float | None = None) -> dict[str, int]:
    """One pass over the directory users; counts by outcome (ok, disabled, unchecked, error,
    not reached)."""
    counts: Counter[str] = Counter()
    stop_at = None if deadline_s is None else time.monotonic() + deadline_s
    for source, configured, check in (
        (DirectoryIdentity.Source.LDAP, ldap_configured, _ldap_check),
        (DirectoryIdentity.Source.OIDC, oidc_configured, _oidc_check),
    ):
        if not configured():
            continue
        # Read first, then ask: each check writes (and may take seconds) while no cursor is open.
        for identity in list(_due(source).select_related("user")):
            if stop_at is not None and time.monotonic() > stop_at:
                counts["not reached"] += 1
                continue
            outcome = check(identity)
            counts[outcome] += 1
            if outcome == "error":
                break  # the directory did not answer: the rest would fail alike
    log.info("directory sync: %s", dict(counts) or "nothing to check")
    return dict(counts)


def directory_identity_check(identity: DirectoryIdentity) -> str:
    """Check one directory user now (the admin's action): the outcome, as counted by a pass."""
    if identity.source == DirectoryIdentity.Source.LDAP:
        return _ldap_check(identity) if ldap_configured() else "unchecked"
    return _oidc_check(identity) if oidc_configured() else "unchecked"


def _ldap_check(identity: DirectoryIdentity) -> str:
    return ldap_identity_check(identity, trigger=SYNC)


def _oidc_check(identity: DirectoryIdentity) -> str:
    token = refresh_token_open(identity.refresh_token)
    if not token:
        return "unchecked"
    try:
        answer = refresh_grant_redeem(token)
        claims = userinfo_fetch(answer["access_token"])
        if answer.get("id_token"):
            claims = {**PortalOIDCBackend().id_token_verify(answer["id_token"]), **claims}
    except GrantRefused as refused:
        directory_user_disable(
            identity=identity,
            reason=f"the identity provider refused the refresh grant: {refused}",
            trigger=SYNC,
        )
        return "disabled"
    except (ProviderUnavailable, SuspiciousOperation) as error:
        log.warning("OIDC check of %s failed: %s", identity.user, error)
        return "error"
    if claims.get("sub") != identity.subject:
        log.warning("OIDC check of %s: the provider answered about another subject", identity)
        return "error"
    person = person_from_claims(claims)
    if settings.PORTAL_OIDC_GROUPS_CLAIM not in claims:
        person = replace(person, groups=None)  # no word on groups: memberships stay
    try:
        directory_user_sign_in(person=person, trigger=SYNC)
    except SignInRefused:
        return "error"  # recorded by the service
    DirectoryIdentity.objects.filter(pk=identity.pk).update(
        refresh_token=refresh_token_seal(answer.get("refresh_token") or token)
    )
    return "ok"
