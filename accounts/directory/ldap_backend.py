"""LDAP and Active Directory sign-in with django-auth-ldap, configured by PORTAL_LDAP_* settings.

The user name and password of the sign-in form are checked by binding as the user found with
PORTAL_LDAP_USER_FILTER below PORTAL_LDAP_USER_BASE (searched with the service account
PORTAL_LDAP_BIND_DN). The portal user is made or updated by the sign-in service from the entry
(mail, givenName, sn) and the groups found below PORTAL_LDAP_GROUP_BASE (their gidNumber where
present), which the group mapping turns into project memberships. A directory "disables" a user
by no longer returning them from the user filter (AD's userAccountControl bit, OpenLDAP's
ppolicy lock: docs/sign-in.md) or from PORTAL_LDAP_REQUIRE_GROUP; the next sign-in attempt and
the periodic sync then make the portal user inactive.

Every AUTH_LDAP_* setting of django-auth-ldap still overrides what is derived here.
"""

from __future__ import annotations

import logging
import threading
from contextlib import contextmanager

import ldap
from django.conf import settings
from django.contrib import messages
from django_auth_ldap.backend import LDAPBackend, ldap_error
from django_auth_ldap.config import (
    GroupOfNamesType,
    LDAPSearch,
    LDAPSettings,
    NestedActiveDirectoryGroupType,
    PosixGroupType,
)

from accounts.directory.mapping import DirectoryGroup
from accounts.directory.services import (
    DirectoryPerson,
    SignInRefused,
    directory_user_disable,
    directory_user_sign_in,
)
from accounts.models import DirectoryChange, DirectoryIdentity

log = logging.getLogger(__name__)
SOURCE = DirectoryIdentity.Source.LDAP

# PORTAL_LDAP_GROUP_TYPE -> (django-auth-ldap group type, the filter of group entries)
GROUP_TYPES = {
    "groupOfNames": (GroupOfNamesType, "(objectClass=groupOfNames)"),
    "posixGroup": (PosixGroupType, "(objectClass=posixGroup)"),
    "activeDirectory": (NestedActiveDirectoryGroupType, "(objectClass=group)"),
}
# Portal user field -> LDAP attribute (the same names in OpenLDAP's inetOrgPerson and AD).
USER_ATTRIBUTES = {"email": "mail", "first_name": "givenName", "last_name": "sn"}
DISABLED_REASON = (
    "the directory no longer returns the user (deleted, disabled or locked, or outside the "
    "user filter or the required group)"
)


def ldap_configured() -> bool:
    return bool(settings.PORTAL_LDAP_URL)


def ldap_defaults() -> dict:
    """django-auth-ldap's settings derived from the PORTAL_LDAP_* settings."""
    options: dict = {ldap.OPT_REFERRALS: 0, ldap.OPT_NETWORK_TIMEOUT: 10, ldap.OPT_TIMEOUT: 30}
    if settings.PORTAL_LDAP_CA_FILE:
        options[ldap.OPT_X_TLS_CACERTFILE] = settings.PORTAL_LDAP_CA_FILE
        options[ldap.OPT_X_TLS_REQUIRE_CERT] = ldap.OPT_X_TLS_DEMAND
        options[ldap.OPT_X_TLS_NEWCTX] = 0  # last: applies the TLS options above
    defaults = {
        "SERVER_URI": settings.PORTAL_LDAP_URL,
        "BIND_DN": settings.PORTAL_LDAP_BIND_DN,
        "BIND_PASSWORD": settings.PORTAL_LDAP_BIND_PASSWORD,
        "START_TLS": settings.PORTAL_LDAP_START_TLS,
        "CONNECTION_OPTIONS": options,
        "USER_SEARCH": LDAPSearch(
            settings.PORTAL_LDAP_USER_BASE, ldap.SCOPE_SUBTREE, settings.PORTAL_LDAP_USER_FILTER
        ),
        # The sign-in service updates the user (accounts/directory/services.py).
        "ALWAYS_UPDATE_USER": False,
        "REQUIRE_GROUP": settings.PORTAL_LDAP_REQUIRE_GROUP or None,
    }
    if settings.PORTAL_LDAP_GROUP_BASE:
        group_type, group_filter = GROUP_TYPES[settings.PORTAL_LDAP_GROUP_TYPE]
        defaults["GROUP_TYPE"] = group_type()
        defaults["GROUP_SEARCH"] = LDAPSearch(
            settings.PORTAL_LDAP_GROUP_BASE, ldap.SCOPE_SUBTREE, group_filter
        )
    return defaults


# django-auth-ldap reports directory errors (server down, bad bind) through a signal and
# answers "no such user": the checks below must tell the two apart, or an unreachable directory
# would disable everyone.
_errors = threading.local()


def _note_error(sender, context=None, exception=None, **kwargs) -> None:
    seen = getattr(_errors, "seen", None)
    if seen is not None:
        seen.append(f"{context}: {exception}")


@contextmanager
def _directory_errors():
    _errors.seen = []
    try:
        yield _errors.seen
    finally:
        _errors.seen = None


class PortalLDAPBackend(LDAPBackend):
    """django-auth-ldap's backend with the portal's settings, identities and group mapping."""

    trigger: str = DirectoryChange.Trigger.SIGN_IN
    _settings: LDAPSettings | None = None

    @property
    def settings(self):
        if self._settings is None:
            self._settings = LDAPSettings(self.settings_prefix, ldap_defaults())
        return self._settings

    @settings.setter
    def settings(self, value):
        self._settings = value

    def authenticate(self, request, username=None, password=None, **kwargs):
        if not ldap_configured() or not username or not password:
            return None
        self._refusal: str | None = None
        user = super().authenticate(request, username=username, password=password, **kwargs)
        if user is None:
            if self._refusal and request is not None:
                messages.error(request, self._refusal)
            # A directory user whom the directory no longer finds is disabled now, not only
            # at the next sync (a wrong password changes nothing).
            identity = DirectoryIdentity.objects.filter(
                source=SOURCE, subject=username.strip().lower()
            ).first()
            if identity is not None:
                ldap_identity_check(identity, trigger=self.trigger)
        return user

    def get_user(self, user_id):
        # A session outlives nothing: a user made inactive is signed out at the next request.
        user = super().get_user(user_id)
        return user if user is not None and user.is_active else None

    def get_or_build_user(self, username, ldap_user):
        """The portal user of this entry, made or updated by the sign-in service (never a
        local account of the same name: that is refused)."""
        required = self.settings.REQUIRE_GROUP
        if isinstance(required, str):
            # Checked by django-auth-ldap at sign-in; the sync's lookup must check it too.
            if required.casefold() not in {dn.casefold() for dn in ldap_user.group_dns}:
                raise ldap_user.AuthenticationFailed("not in the required group")
        try:
            user = directory_user_sign_in(
                person=self._person(username, ldap_user), trigger=self.trigger
            )
        except SignInRefused as refused:
            self._refusal = str(refused)
            raise ldap_user.AuthenticationFailed(str(refused)) from None
        return user, False

    def _person(self, username: str, ldap_user) -> DirectoryPerson:
        attrs = ldap_user.attrs or {}

        def first(attribute: str) -> str:
            values = attrs.get(attribute) or []
            return str(values[0]) if values else ""

        groups: tuple[DirectoryGroup, ...] = ()
        if self.settings.GROUP_SEARCH is not None and self.settings.GROUP_TYPE is not None:
            found = self.settings.GROUP_TYPE.user_groups(ldap_user, self.settings.GROUP_SEARCH)
            groups = tuple(
                DirectoryGroup(name=dn, gid=_gid(group_attrs)) for dn, group_attrs in found
            )
        name = username.strip().lower()
        return DirectoryPerson(
            source=SOURCE,
            subject=name,
            username=name,
            email=first(USER_ATTRIBUTES["email"]),
            first_name=first(USER_ATTRIBUTES["first_name"]),
            last_name=first(USER_ATTRIBUTES["last_name"]),
            groups=groups,
        )


ldap_error.connect(_note_error, sender=PortalLDAPBackend, dispatch_uid="portal-ldap-errors")


def _gid(attrs) -> int | None:
    values = (attrs or {}).get("gidNumber") or []
    try:
        return int(values[0]) if values else None
    except ValueError:
        return None


def ldap_identity_check(identity: DirectoryIdentity, *, trigger: str) -> str:
    """Ask the directory about an LDAP user with the service account: "ok" (found: the user,
    groups and memberships updated, enabled again if the directory had disabled them),
    "disabled" (not found: made inactive) or "error" (the directory did not answer: nothing
    changed)."""
    backend = PortalLDAPBackend()
    backend.trigger = trigger
    with _directory_errors() as errors:
        user = backend.populate_user(identity.subject)
    if errors:
        log.warning("LDAP check of %s failed: %s", identity.subject, "; ".join(errors))
        return "error"
    if user is None:
        directory_user_disable(identity=identity, reason=DISABLED_REASON, trigger=trigger)
        return "disabled"
    return "ok"
