"""OpenID Connect sign-in against the real provider (scripts/oidc-provider.sh): the code flow
(the portal's side in Django's test client, the person's side at the provider with requests),
users made from the claims, the groups claim mapped to projects, refusals, and the periodic
sync redeeming refresh tokens: a user the provider disables stops working everywhere."""

import json
from urllib.parse import parse_qs, urljoin, urlparse

import pytest
import requests
from cryptography import x509
from django.conf import settings
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from accounts.certs.services import (
    CertificateRejected,
    login_certificate_issue,
    login_certificate_verify,
)
from accounts.directory.oidc_provider import discovery_forget
from accounts.directory.sync import directory_sync
from accounts.models import DirectoryChange, DirectoryIdentity, Membership, Project
from accounts.tokens import api_token_rotate
from jobs.models import Job
from ssh.access import ssh_login_check
from tapis.tokens import tapis_token_check, tapis_token_issue
from tests.signin.directory_servers import oidc_control, unique

pytestmark = [pytest.mark.django_db, pytest.mark.oidc]
Action = DirectoryChange.Action


def provider_sign_in(client, username: str, password: str):
    """The browser's part of the code flow: the portal sends the person to the provider, who
    signs in there and is sent back to the portal's callback. Returns the callback's answer."""
    start = client.get("/oidc/authenticate/?next=/profile/")
    assert start.status_code == 302, start.content[:300]
    authorize = start["Location"]
    assert authorize.startswith(settings.PORTAL_OIDC_ISSUER), authorize
    assert parse_qs(urlparse(authorize).query)["code_challenge_method"] == ["S256"]
    person = requests.Session()
    answer = person.get(authorize, allow_redirects=False, timeout=10)
    assert answer.status_code == 302
    login_url = urljoin(authorize, answer.headers["Location"])
    person.get(login_url, timeout=10)
    answer = person.post(
        login_url,
        data={
            "username": username,
            "password": password,
            "csrfmiddlewaretoken": person.cookies["idp_csrftoken"],
            "next": parse_qs(urlparse(login_url).query)["next"][0],
        },
        headers={"Referer": login_url},
        allow_redirects=False,
        timeout=10,
    )
    if answer.status_code != 302:
        return None  # the provider refused the person
    answer = person.get(urljoin(login_url, answer.headers["Location"]), allow_redirects=False)
    callback = answer.headers["Location"]
    assert callback.startswith("http://testserver/oidc/callback/"), callback
    return client.get(callback.removeprefix("http://testserver"))


@pytest.fixture
def lab(oidc_portal, settings, project):
    """A person at the provider in two groups (names unique to the test)."""
    name, nlp, admins = unique("ada"), unique("nlp-"), unique("admins-")
    oidc_control(
        "user", name, "--password", "ada-pw", "--given", "Ada", "--family", "Lovelace",
        "--groups", f"{nlp},{admins}",
    )  # fmt: skip
    settings.PORTAL_SIGNIN_GROUP_MAP = json.dumps(
        {
            nlp: {"project": "nlp", "gid": 7201},  # the provider tells no GID: the mapping's
            admins: {"project": "vision", "role": "manager"},
        }
    )
    assert project.name == "vision"  # tests/conftest.py's
    return {"name": name, "nlp": nlp, "admins": admins}


def test_sign_in_makes_the_user_from_the_claims_and_maps_groups(client, lab):
    answer = provider_sign_in(client, lab["name"], "ada-pw")
    assert answer.status_code == 302 and answer["Location"] == "/profile/"
    assert client.get("/profile/").status_code == 200
    user = get_user_model().objects.get(username=lab["name"])
    assert (user.email, user.first_name, user.last_name) == (
        f"{lab['name']}@lab.example",
        "Ada",
        "Lovelace",
    )
    assert not user.has_usable_password()
    identity = DirectoryIdentity.objects.get(user=user)
    assert identity.source == "oidc" and identity.subject.isdigit()  # the provider's sub
    assert identity.refresh_token and lab["name"] not in identity.refresh_token  # sealed
    roles = {m.project.name: m.role for m in Membership.objects.filter(user=user)}
    assert roles == {"nlp": "member", "vision": "manager"}
    assert Project.objects.get(name="nlp").gid == 7201
    assert DirectoryChange.objects.filter(user=user, action=Action.MEMBERSHIP_ADDED).count() == 2


def test_the_sign_in_page_offers_the_provider_only_when_configured(client, lab, settings):
    page = client.get("/accounts/login/").content.decode()
    assert 'id="signin-oidc"' in page and "Sign in with Test lab" in page
    settings.PORTAL_OIDC_ISSUER = ""
    assert 'id="signin-oidc"' not in client.get("/accounts/login/").content.decode()
    assert client.get("/oidc/authenticate/").status_code == 404


def test_groups_follow_the_provider_at_the_next_sign_in(client, lab, make_user):
    provider_sign_in(client, lab["name"], "ada-pw")
    user = get_user_model().objects.get(username=lab["name"])
    speech = Project.objects.create(name="speech", gid=6002)
    Membership.objects.create(user=user, project=speech)  # an admin's: stays
    oidc_control("user", lab["name"], "--password", "ada-pw", "--groups", lab["nlp"])
    client.logout()
    provider_sign_in(client, lab["name"], "ada-pw")
    roles = {m.project.name: m.role for m in Membership.objects.filter(user=user)}
    assert roles == {"nlp": "member", "speech": "member"}
    assert DirectoryChange.objects.get(action=Action.MEMBERSHIP_REMOVED).project_name == "vision"


def test_a_local_account_with_the_claimed_name_is_refused(client, lab, make_user):
    make_user(lab["name"])
    answer = provider_sign_in(client, lab["name"], "ada-pw")
    assert answer.status_code == 302 and answer["Location"] == "/accounts/login/"
    assert client.get("/profile/").status_code == 302  # not signed in
    assert not DirectoryIdentity.objects.exists()
    page = client.get("/accounts/login/").content.decode()
    assert "not linked" in page  # the person is told why
    assert DirectoryChange.objects.get(action=Action.REFUSED).username == lab["name"]


def test_the_provider_disabling_the_user_stops_every_way_in(client, lab, submit, project, slave):
    provider_sign_in(client, lab["name"], "ada-pw")
    user = get_user_model().objects.get(username=lab["name"])
    _, tapis_key = tapis_token_issue(user=user)
    assert tapis_token_check(tapis_key) is not None
    # A running job of the user's (a manager of vision through the admins group): the SSH
    # gateway lets its owner in, or tells why not.
    job = submit(user=user, project=project)
    Job.objects.filter(pk=job.pk).update(status="RUNNING", slave=slave, container_id="c0ffee")
    ssh = ssh_login_check(username=str(job.uuid), blob=b"", fingerprint="SHA256:none")
    assert "disabled" not in ssh.reason
    _, key = api_token_rotate(user=user)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert api.get("/api/portal/projects/").status_code == 200
    issued = login_certificate_issue(user=user)  # a fresh CA per test (tests/conftest.py)
    certificate = x509.load_pem_x509_certificate(
        issued.pem[issued.pem.index(b"-----BEGIN CERTIFICATE") :]
    )
    assert login_certificate_verify(certificate).user == user

    assert directory_sync() == {"ok": 1}  # the refresh grant redeemed, the token rotated
    oidc_control("user", lab["name"], "--password", "ada-pw", "--disabled")
    assert directory_sync() == {"disabled": 1}
    user.refresh_from_db()
    assert not user.is_active
    assert api.get("/api/portal/projects/").status_code == 401
    with pytest.raises(CertificateRejected):
        login_certificate_verify(certificate)
    assert tapis_token_check(tapis_key) is None
    ssh = ssh_login_check(username=str(job.uuid), blob=b"", fingerprint="SHA256:none")
    assert not ssh.allowed and ssh.reason == "the job owner's account is disabled"
    assert client.get("/profile/").status_code == 302  # the session ends
    change = DirectoryChange.objects.get(action=Action.USER_DISABLED)
    assert change.trigger == "sync" and "refused the refresh grant" in change.detail
    assert provider_sign_in(client, lab["name"], "ada-pw") is None  # the provider says no

    # Enabled at the provider again: the next sign-in enables the portal user too.
    oidc_control("user", lab["name"], "--password", "ada-pw", "--groups", lab["nlp"])
    assert provider_sign_in(client, lab["name"], "ada-pw").status_code == 302
    user.refresh_from_db()
    assert user.is_active
    assert api.get("/api/portal/projects/").status_code == 200
    assert directory_sync() == {"ok": 1}


def test_the_sync_follows_group_changes(client, lab):
    provider_sign_in(client, lab["name"], "ada-pw")
    user = get_user_model().objects.get(username=lab["name"])
    oidc_control("user", lab["name"], "--password", "ada-pw", "--groups", lab["admins"])
    assert directory_sync() == {"ok": 1}
    assert set(Membership.objects.filter(user=user).values_list("project__name", flat=True)) == {
        "vision"
    }
    assert DirectoryChange.objects.get(action=Action.MEMBERSHIP_REMOVED).trigger == "sync"


def test_an_unreachable_provider_changes_nothing(client, lab, settings):
    provider_sign_in(client, lab["name"], "ada-pw")
    settings.PORTAL_OIDC_ISSUER = "http://127.0.0.1:9/o"
    discovery_forget()
    assert directory_sync() == {"error": 1}
    assert get_user_model().objects.get(username=lab["name"]).is_active
    # The sign-in page still works, and so do local accounts.
    start = client.get("/oidc/authenticate/")
    assert start.status_code == 302 and start["Location"] == "/accounts/login/"
    assert "did not answer" in client.get("/accounts/login/").content.decode()
