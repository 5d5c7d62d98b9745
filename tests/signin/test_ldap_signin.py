"""LDAP sign-in against the real slapd (scripts/slapd.sh): the sign-in form, users made from the
entry, groups mapped to projects (GIDs from gidNumber), membership following the directory,
and a locked account disabled at the next sign-in attempt and by the periodic sync."""

import json

import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from accounts.directory.sync import directory_sync
from accounts.models import DirectoryChange, DirectoryIdentity, Membership, Project
from accounts.tokens import api_token_rotate

pytestmark = [pytest.mark.django_db, pytest.mark.ldap]
Action = DirectoryChange.Action


def sign_in(client, username: str, password: str):
    response = client.post("/accounts/login/", {"username": username, "password": password})
    return response.status_code == 302, response


@pytest.fixture
def lab(ldap_portal, settings):
    """ada in nlp (gidNumber 7101) and vision-admins; grace in nlp only."""
    tree = ldap_portal
    tree.add_user("ada", "ada-pw", given="Ada", family="Lovelace", uid_number=5101)
    tree.add_user("grace", "grace-pw", given="Grace", family="Hopper", uid_number=5102)
    nlp = tree.add_group("nlp", ["ada", "grace"], gid=7101)
    admins = tree.add_group("vision-admins", ["ada"])
    settings.PORTAL_SIGNIN_GROUP_MAP = json.dumps(
        {
            nlp.upper(): {"project": "nlp", "role": "member"},  # DNs match case-insensitively
            admins: [{"project": "vision", "role": "manager"}],
        }
    )
    Project.objects.create(name="vision", gid=6001)
    return tree


def test_sign_in_makes_the_user_and_maps_groups_to_projects(client, lab):
    ok, _ = sign_in(client, "Ada", "ada-pw")
    assert ok
    ada = get_user_model().objects.get(username="ada")
    assert (ada.email, ada.first_name, ada.last_name) == ("ada@lab.example", "Ada", "Lovelace")
    assert not ada.has_usable_password()  # signs in through the directory only
    assert client.get("/profile/").status_code == 200  # the session works
    identity = DirectoryIdentity.objects.get(user=ada)
    assert (identity.source, identity.subject) == ("ldap", "ada")
    assert identity.groups == sorted([lab.group_dn("nlp"), lab.group_dn("vision-admins")])
    roles = {m.project.name: m.role for m in Membership.objects.filter(user=ada)}
    assert roles == {"nlp": "member", "vision": "manager"}
    # nlp did not exist: made with the directory group's gidNumber.
    assert Project.objects.get(name="nlp").gid == 7101
    actions = sorted(DirectoryChange.objects.filter(user=ada).values_list("action", flat=True))
    assert actions == sorted(
        [Action.USER_CREATED, Action.PROJECT_CREATED] + [Action.MEMBERSHIP_ADDED] * 2
    )
    assert set(DirectoryChange.objects.values_list("trigger", flat=True)) == {"sign-in"}


def test_wrong_password_and_unknown_user_are_refused(client, lab):
    assert not sign_in(client, "ada", "not-her-password")[0]
    assert not sign_in(client, "nobody", "whatever")[0]
    assert not get_user_model().objects.filter(username__in=["ada", "nobody"]).exists()


def test_membership_follows_the_directory_and_local_members_stay(client, lab, make_user):
    assert sign_in(client, "ada", "ada-pw")[0]
    ada = get_user_model().objects.get(username="ada")
    # An admin adds ada to a project of their own choosing: the mapping never touches it.
    speech = Project.objects.create(name="speech", gid=6002)
    Membership.objects.create(user=ada, project=speech, role="member")
    # The directory moves ada out of nlp, and vision-admins now grants only a member role.
    lab.set_members("nlp", ["grace"])
    client.logout()
    assert sign_in(client, "ada", "ada-pw")[0]
    roles = {m.project.name: m.role for m in Membership.objects.filter(user=ada)}
    assert roles == {"speech": "member", "vision": "manager"}
    removed = DirectoryChange.objects.get(user=ada, action=Action.MEMBERSHIP_REMOVED)
    assert removed.project_name == "nlp" and lab.group_dn("nlp") in removed.detail


def test_a_local_account_of_the_same_name_is_never_taken_over(client, lab, make_user):
    local = make_user("ada")  # a local account, no directory identity
    assert not sign_in(client, "ada", "ada-pw")[0]
    local.refresh_from_db()
    assert not hasattr(local, "directory_identity") or local.directory_identity is None
    assert not Membership.objects.filter(user=local).exists()
    refused = DirectoryChange.objects.get(action=Action.REFUSED)
    assert refused.username == "ada" and "not linked" in refused.detail
    # The local account still signs in with its own password.
    assert sign_in(client, "ada", "pw-ada")[0]


def test_a_locked_account_is_disabled_at_its_next_sign_in_attempt(client, lab):
    assert sign_in(client, "ada", "ada-pw")[0]
    ada = get_user_model().objects.get(username="ada")
    _, key = api_token_rotate(user=ada)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert api.get("/api/portal/projects/").status_code == 200

    lab.lock("ada")
    assert not sign_in(client, "ada", "ada-pw")[0]
    ada.refresh_from_db()
    assert not ada.is_active
    assert api.get("/api/portal/projects/").status_code == 401  # the API token stops working
    change = DirectoryChange.objects.get(user=ada, action=Action.USER_DISABLED)
    assert change.trigger == "sign-in"

    lab.unlock("ada")
    assert sign_in(client, "ada", "ada-pw")[0]
    ada.refresh_from_db()
    assert ada.is_active
    assert api.get("/api/portal/projects/").status_code == 200
    assert DirectoryChange.objects.filter(user=ada, action=Action.USER_ENABLED).count() == 1


def test_the_periodic_sync_disables_and_enables_and_follows_groups(client, lab):
    assert sign_in(client, "ada", "ada-pw")[0]
    client.logout()
    assert sign_in(client, "grace", "grace-pw")[0]
    grace = get_user_model().objects.get(username="grace")
    assert client.get("/profile/").status_code == 200

    lab.lock("grace")
    lab.set_members("vision-admins", [])
    counts = directory_sync()
    assert counts == {"ok": 1, "disabled": 1}
    grace.refresh_from_db()
    assert not grace.is_active
    # Her open session ends at the next request.
    assert client.get("/profile/").status_code == 302
    ada = get_user_model().objects.get(username="ada")
    assert set(Membership.objects.filter(user=ada).values_list("project__name", flat=True)) == {
        "nlp"
    }
    assert DirectoryChange.objects.filter(trigger="sync", action=Action.MEMBERSHIP_REMOVED).count()

    lab.unlock("grace")
    assert directory_sync() == {"ok": 2}
    grace.refresh_from_db()
    assert grace.is_active


def test_an_admin_deactivation_is_not_undone_by_the_directory(client, lab):
    assert sign_in(client, "ada", "ada-pw")[0]
    get_user_model().objects.filter(username="ada").update(is_active=False)
    assert directory_sync() == {}  # not asked about: an admin's decision
    assert not sign_in(client, "ada", "ada-pw")[0]
    assert not get_user_model().objects.get(username="ada").is_active


def test_an_unreachable_directory_changes_nothing(client, lab, settings):
    assert sign_in(client, "ada", "ada-pw")[0]
    settings.PORTAL_LDAP_URL = "ldap://127.0.0.1:9"  # nothing listens there
    assert directory_sync() == {"error": 1}
    assert get_user_model().objects.get(username="ada").is_active
    assert not DirectoryChange.objects.filter(action=Action.USER_DISABLED).exists()


def test_an_admin_links_a_local_account_to_its_directory_entry(client, lab, make_user):
    local = make_user("ada")
    vision = Project.objects.get(name="vision")
    Membership.objects.create(user=local, project=vision)  # added by hand
    DirectoryIdentity.objects.create(user=local, source="ldap", subject="ada")
    assert sign_in(client, "ada", "ada-pw")[0]
    assert get_user_model().objects.filter(username="ada").count() == 1
    local.refresh_from_db()
    assert local.first_name == "Ada"
    roles = {m.project.name: m.role for m in Membership.objects.filter(user=local)}
    # vision-admins grants manager in vision, but the admin's own membership is theirs to change.
    assert roles == {"vision": "member", "nlp": "member"}
