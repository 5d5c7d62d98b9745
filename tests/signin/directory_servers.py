"""The real directory servers of the sign-in tests, as .ci/run starts them:

- slapd (scripts/slapd.sh) at PORTAL_TEST_LDAP_URL, e.g. ldap://127.0.0.1:3890: each test gets
  its own subtree ``ou=run-<hex>,dc=lab,dc=example`` with people and groups, removed after;
- the OpenID Connect provider (scripts/oidc-provider.sh) at PORTAL_TEST_OIDC_ISSUER, e.g.
  http://127.0.0.1:9080/o: users, groups and the portal's client are written with its
  control script (tests/support/oidc_provider/control.py); names are unique per test.

Without them the tests skip, unless PORTAL_REQUIRE_LDAP=1 / PORTAL_REQUIRE_OIDC=1 (CI).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

from tests.support.services import require

ROOT = Path(__file__).resolve().parents[2]
SUFFIX = "dc=lab,dc=example"
LDAP_ADMIN = ("cn=admin,dc=lab,dc=example", "ldap-admin-pw")
LDAP_PORTAL = ("cn=portal,ou=services,dc=lab,dc=example", "ldap-portal-pw")
# OpenLDAP's ppolicy lock (scripts/slapd.sh loads the overlay): such an account cannot bind,
# and the portal's user filter leaves it out.
LOCKED_FILTER = "(&(uid=%(user)s)(!(pwdAccountLockedTime=*)))"
OIDC_CLIENT = ("gpu-portal-test", "gpu-portal-test-secret")


def unique(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:8]}"


# --- LDAP ------------------------------------------------------------------------------------


def ldap_url() -> str:
    url = os.environ.get("PORTAL_TEST_LDAP_URL", "")
    reason = "PORTAL_TEST_LDAP_URL is not set (scripts/slapd.sh start)"
    if url:
        try:
            import ldap

            connection = ldap.initialize(url)
            connection.set_option(ldap.OPT_NETWORK_TIMEOUT, 3)
            connection.simple_bind_s(*LDAP_PORTAL)
            connection.unbind_s()
        except Exception as error:  # any failure is a missing server
            url, reason = "", f"slapd at {url} does not answer: {error}"
    require("ldap", bool(url), reason)
    return url


class LdapTree:
    """A subtree of the test directory: people and groups, written as the directory admin."""

    def __init__(self, url: str):
        import ldap

        self.ldap = ldap
        self.url = url
        self.base = f"ou={unique('run-')},{SUFFIX}"
        self.people = f"ou=people,{self.base}"
        self.groups = f"ou=groups,{self.base}"
        self.connection = ldap.initialize(url)
        self.connection.simple_bind_s(*LDAP_ADMIN)
        for dn in (self.base, self.people, self.groups):
            self._add(dn, {"objectClass": ["organizationalUnit"], "ou": [dn.split(",")[0][3:]]})

    def _add(self, dn: str, attrs: dict) -> None:
        from ldap.modlist import addModlist

        encoded = {k: [str(v).encode() for v in values] for k, values in attrs.items()}
        self.connection.add_s(dn, addModlist(encoded))

    def user_dn(self, uid: str) -> str:
        return f"uid={uid},{self.people}"

    def group_dn(self, cn: str) -> str:
        return f"cn={cn},{self.groups}"

    def add_user(self, uid: str, password: str, *, given: str, family: str, uid_number: int):
        self._add(
            self.user_dn(uid),
            {
                "objectClass": ["inetOrgPerson", "posixAccount"],
                "uid": [uid],
                "cn": [f"{given} {family}"],
                "givenName": [given],
                "sn": [family],
                "mail": [f"{uid}@lab.example"],
                "uidNumber": [uid_number],
                "gidNumber": [uid_number],
                "homeDirectory": [f"/home/{uid}"],
                "userPassword": [password],
            },
        )

    def add_group(self, cn: str, members: list[str], *, gid: int | None = None) -> str:
        """A groupOfNames (with a gidNumber, through extensibleObject, when given)."""
        attrs: dict = {
            "objectClass": ["groupOfNames"] + (["extensibleObject"] if gid else []),
            "cn": [cn],
            # groupOfNames needs a member: the empty group names its own subtree.
            "member": [self.user_dn(m) for m in members] or [self.base],
        }
        if gid:
            attrs["gidNumber"] = [gid]
        self._add(self.group_dn(cn), attrs)
        return self.group_dn(cn)

    def set_members(self, cn: str, members: list[str]) -> None:
        values = [self.user_dn(m).encode() for m in members] or [self.base.encode()]
        self.connection.modify_s(self.group_dn(cn), [(self.ldap.MOD_REPLACE, "member", values)])

    def lock(self, uid: str) -> None:
        """What an OpenLDAP admin does to disable an account (ppolicy's permanent lock)."""
        self.connection.modify_s(
            self.user_dn(uid),
            [(self.ldap.MOD_REPLACE, "pwdAccountLockedTime", [b"000001010000Z"])],
        )

    def unlock(self, uid: str) -> None:
        self.connection.modify_s(
            self.user_dn(uid), [(self.ldap.MOD_DELETE, "pwdAccountLockedTime", None)]
        )

    def remove(self) -> None:
        found = self.connection.search_s(self.base, self.ldap.SCOPE_SUBTREE, attrlist=["1.1"])
        for dn, _ in sorted(found, key=lambda item: -len(item[0])):  # leaves first
            self.connection.delete_s(dn)
        self.connection.unbind_s()

    def portal_settings(self) -> dict:
        """The PORTAL_LDAP_* settings of a portal signing in against this subtree."""
        return {
            "PORTAL_LDAP_URL": self.url,
            "PORTAL_LDAP_BIND_DN": LDAP_PORTAL[0],
            "PORTAL_LDAP_BIND_PASSWORD": LDAP_PORTAL[1],
            "PORTAL_LDAP_USER_BASE": self.people,
            "PORTAL_LDAP_USER_FILTER": LOCKED_FILTER,
            "PORTAL_LDAP_GROUP_BASE": self.groups,
            "PORTAL_LDAP_GROUP_TYPE": "groupOfNames",
        }


# --- OpenID Connect ----------------------------------------------------------------------------


def oidc_issuer() -> str:
    issuer = os.environ.get("PORTAL_TEST_OIDC_ISSUER", "").rstrip("/")
    reason = "PORTAL_TEST_OIDC_ISSUER is not set (scripts/oidc-provider.sh start)"
    if issuer:
        import requests

        try:
            requests.get(f"{issuer}/.well-known/openid-configuration", timeout=3).raise_for_status()
        except requests.RequestException as error:
            issuer, reason = "", f"the OIDC provider at {issuer} does not answer: {error}"
    require("oidc", bool(issuer), reason)
    return issuer


def oidc_control(*args: str) -> dict:
    """Run the provider's control script (its users, groups, clients)."""
    provider_dir = os.environ.get("PORTAL_OIDC_PROVIDER_DIR", str(ROOT / "var" / "oidc-provider"))
    done = subprocess.run(
        [sys.executable, "-m", "tests.support.oidc_provider.control", *args],
        cwd=ROOT,
        env={
            **{k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"},
            "OIDC_PROVIDER_DIR": provider_dir,
            "DJANGO_SETTINGS_MODULE": "tests.support.oidc_provider.settings",
        },
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, f"control {args}: {done.stdout}\n{done.stderr}"
    return json.loads(done.stdout.strip().splitlines()[-1])


def oidc_portal_settings(issuer: str) -> dict:
    return {
        "PORTAL_OIDC_ISSUER": issuer,
        "PORTAL_OIDC_CLIENT_ID": OIDC_CLIENT[0],
        "PORTAL_OIDC_CLIENT_SECRET": OIDC_CLIENT[1],
        "PORTAL_OIDC_SCOPES": "openid email profile groups offline_access",
        "PORTAL_OIDC_LABEL": "Test lab",
    }
