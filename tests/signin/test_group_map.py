"""The group mapping and the sign-in service without a directory server: the mapping's rules,
what it grants, the refusals it records, and that local accounts are untouched when neither
OIDC nor LDAP is configured (the `make run` default)."""

import io
import json

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from accounts.directory.checks import signin_settings_check
from accounts.directory.mapping import (
    DirectoryGroup,
    GroupMapError,
    group_map_parse,
    project_grants,
)
from accounts.directory.services import (
    DirectoryPerson,
    SignInRefused,
    directory_user_disable,
    directory_user_sign_in,
)
from accounts.models import DirectoryChange, DirectoryIdentity, Membership, Project

Action = DirectoryChange.Action


@pytest.mark.parametrize(
    "value, message",
    [
        ("{not json", "not JSON"),
        ("[1]", "must be a JSON object"),
        ({"g": "nlp"}, "g[0]: must be an object"),
        ({"g": {"project": "1bad"}}, "g[0].project: must start with a letter"),
        ({"g": {"project": "nlp", "role": "owner"}}, "g[0].role: must be one of member, manager"),
        ({"g": [{"project": "nlp"}, {"project": "cv", "gid": 0}]}, "g[1].gid: must be a positive"),
        ({"g": {"project": "nlp", "colour": "red"}}, "unknown keys ['colour']"),
        ({"G": {"project": "a1"}, "g": {"project": "b1"}}, "named twice"),
    ],
)
def test_a_malformed_mapping_is_refused_naming_the_rule(value, message, settings):
    with pytest.raises(GroupMapError, match=message.replace("[", r"\[").replace("]", r"\]")):
        group_map_parse(value)
    settings.PORTAL_SIGNIN_GROUP_MAP = value if isinstance(value, str) else json.dumps(value)
    (error,) = signin_settings_check(None)
    assert error.id == "accounts.E101" and "PORTAL_SIGNIN_GROUP_MAP" in error.msg


def test_half_configured_sign_in_fails_the_checks(settings):
    settings.PORTAL_OIDC_ISSUER = "https://idp.example"
    settings.PORTAL_LDAP_URL = "ldap://ldap.example"
    settings.PORTAL_LDAP_GROUP_TYPE = "groupOfFriends"
    ids = sorted(error.id for error in signin_settings_check(None))
    assert ids == ["accounts.E102", "accounts.E102", "accounts.E104", "accounts.E106"]


def test_grants_take_the_strongest_role_and_the_directory_gid_first():
    group_map = group_map_parse(
        {
            "CN=NLP,DC=lab": {"project": "nlp", "gid": 9000},
            "cn=leads,dc=lab": [{"project": "nlp", "role": "manager"}, {"project": "cv"}],
            "cn=other,dc=lab": {"project": "other"},
        }
    )
    grants = project_grants(
        [DirectoryGroup("cn=nlp,dc=lab", gid=None), DirectoryGroup("cn=leads,dc=lab", gid=7001)],
        group_map,
    )
    assert set(grants) == {"nlp", "cv"}
    assert grants["nlp"].role == "manager"
    assert grants["nlp"].gid == 7001  # the directory's gidNumber beats the mapping's gid
    assert grants["nlp"].groups == ("cn=leads,dc=lab", "cn=nlp,dc=lab")
    assert grants["cv"].role == "member" and grants["cv"].gid == 7001


def person(name="ada", groups=(), source="ldap"):
    return DirectoryPerson(
        source=source, subject=name, username=name, email=f"{name}@lab.example", groups=groups
    )


@pytest.mark.django_db
def test_projects_without_a_gid_or_with_a_taken_one_are_not_made(settings):
    Project.objects.create(name="taken", gid=7001)
    settings.PORTAL_SIGNIN_GROUP_MAP = json.dumps(
        {"cn=a": {"project": "nogid"}, "cn=b": {"project": "clash"}}
    )
    user = directory_user_sign_in(
        person=person(groups=(DirectoryGroup("cn=a"), DirectoryGroup("cn=b", gid=7001)))
    )
    assert not Project.objects.filter(name__in=["nogid", "clash"]).exists()
    assert not Membership.objects.filter(user=user).exists()
    refusals = DirectoryChange.objects.filter(action=Action.REFUSED).values_list(
        "detail", flat=True
    )
    assert sorted(refusals) == [
        "project clash not made: GID 7001 belongs to project taken",
        "project nogid does not exist and neither the directory nor the mapping gives its GID",
    ]


@pytest.mark.django_db
def test_unknown_groups_keep_memberships_and_a_disabled_user_comes_back(settings):
    settings.PORTAL_SIGNIN_GROUP_MAP = json.dumps({"cn=a": {"project": "nlp", "gid": 7101}})
    user = directory_user_sign_in(person=person(groups=(DirectoryGroup("cn=a"),)))
    assert Membership.objects.filter(user=user, project__name="nlp").exists()
    # A sync that learnt nothing about groups (None) leaves memberships alone.
    directory_user_sign_in(person=DirectoryPerson("ldap", "ada", "ada", groups=None))
    assert Membership.objects.filter(user=user, project__name="nlp").exists()
    identity = DirectoryIdentity.objects.get(user=user)
    assert directory_user_disable(identity=identity, reason="gone")
    assert not directory_user_disable(identity=identity, reason="gone")  # once
    user.refresh_from_db()
    assert not user.is_active
    directory_user_sign_in(person=person(groups=(DirectoryGroup("cn=a"),)))
    user.refresh_from_db()
    assert user.is_active
    assert [c.action for c in DirectoryChange.objects.order_by("id")][-2:] == [
        Action.USER_DISABLED,
        Action.USER_ENABLED,
    ]


@pytest.mark.django_db
def test_unusable_user_names_are_refused_and_recorded():
    with pytest.raises(SignInRefused, match="characters other than"):
        directory_user_sign_in(person=person(name="ada lovelace", source="oidc"))
    assert not get_user_model().objects.exists()
    assert DirectoryChange.objects.get().action == Action.REFUSED


@pytest.mark.django_db
def test_local_accounts_alone_by_default(client, make_user, settings):
    assert not settings.PORTAL_OIDC_ISSUER and not settings.PORTAL_LDAP_URL
    make_user("alice")
    page = client.get("/accounts/login/").content.decode()
    assert 'id="signin-oidc"' not in page and 'id="signin-ldap-hint"' not in page
    assert client.get("/oidc/authenticate/").status_code == 404
    response = client.post("/accounts/login/", {"username": "alice", "password": "pw-alice"})
    assert response.status_code == 302
    assert client.get("/profile/").status_code == 200
    out = io.StringIO()
    call_command("directory_sync", stdout=out)
    assert json.loads(out.getvalue()) == {}  # nothing configured, nothing asked
    assert not DirectoryChange.objects.exists()


@pytest.mark.django_db
def test_the_admin_pages(admin_client, make_user, settings):
    settings.PORTAL_SIGNIN_GROUP_MAP = json.dumps({"cn=a": {"project": "nlp", "gid": 7101}})
    directory_user_sign_in(person=person(groups=(DirectoryGroup("cn=a"),)))
    for path in ("directoryidentity", "directorychange", "directorymembership"):
        page = admin_client.get(f"/admin/accounts/{path}/")
        assert page.status_code == 200, path
    assert (
        "membership added" in admin_client.get("/admin/accounts/directorychange/").content.decode()
    )
    assert admin_client.get("/admin/accounts/directorychange/add/").status_code == 403
    # An admin links a local account to its directory entry.
    local = make_user("grace")
    response = admin_client.post(
        "/admin/accounts/directoryidentity/add/",
        {"user": local.pk, "source": "oidc", "subject": "sub-42"},
    )
    assert response.status_code == 302, response.content[:500]
    assert DirectoryIdentity.objects.get(user=local).subject == "sub-42"
    # With nothing configured, asking the directory changes nothing.
    response = admin_client.post(
        "/admin/accounts/directoryidentity/",
        {"action": "check_now", "_selected_action": [local.directory_identity.pk]},
        follow=True,
    )
    assert "1 unchecked" in response.content.decode()
