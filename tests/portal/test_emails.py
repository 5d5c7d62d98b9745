"""E-mail addresses: checked like gpulab-cli checks them, served so they never break a list."""

import pytest
from cryptography import x509

from accounts.emails import HIDDEN_EMAIL, email_for_gpulab, email_problem


@pytest.mark.parametrize(
    ("address", "accepted"),
    [
        ("alice@example.org", True),
        ("admin@localhost", False),  # the old bootstrap admin's address
        ("a@lab.local", False),
        ("a@x.test", False),
        ("no-at-sign", False),
        (HIDDEN_EMAIL, True),
    ],
)
def test_email_rule_matches_the_client(address, accepted):
    assert (email_problem(address) is None) is accepted
    assert email_for_gpulab(address) == (address if accepted else HIDDEN_EMAIL)


def test_admin_refuses_an_address_the_client_rejects(admin_client, django_user_model):
    base = {
        "username": "carol",
        "password1": "x-Very-long-pw-1",
        "password2": "x-Very-long-pw-1",
        # The memberships inline is on the add page too: a researcher and a project, one screen.
        "memberships-TOTAL_FORMS": "0",
        "memberships-INITIAL_FORMS": "0",
    }
    refused = admin_client.post("/admin/auth/user/add/", {**base, "email": "carol@lab.local"})
    assert refused.status_code == 200
    assert "gpulab-cli would reject this address" in refused.content.decode()
    assert not django_user_model.objects.filter(username="carol").exists()
    admin_client.post("/admin/auth/user/add/", {**base, "email": "carol@example.org"})
    assert django_user_model.objects.get(username="carol").email == "carol@example.org"


def test_user_page_edits_memberships(admin_client, member, project):
    page = admin_client.get(f"/admin/auth/user/{member.pk}/change/").content.decode()
    assert "memberships-TOTAL_FORMS" in page and project.name in page


@pytest.mark.parametrize(("stored", "in_pem"), [("", HIDDEN_EMAIL), ("a@x.local", HIDDEN_EMAIL)])
def test_login_pem_always_carries_an_address_the_client_accepts(member, stored, in_pem):
    """gpulab-cli reads the submitter's address from the PEM and fails every submit without."""
    from accounts.certs.services import login_certificate_issue

    type(member).objects.filter(pk=member.pk).update(email=stored)
    member.refresh_from_db()
    issued = login_certificate_issue(user=member)
    cert = x509.load_pem_x509_certificate(issued.pem)
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.RFC822Name) == [in_pem]


def test_bootstrap_admin_gets_an_address_the_client_accepts(
    db, settings, tmp_path, django_user_model
):
    from portal.bootstrap import bootstrap_demo

    settings.VAR_DIR = tmp_path
    settings.PORTAL_LOCAL_DOCKER_URL = f"unix://{tmp_path}/no-docker.sock"
    result = bootstrap_demo()
    admin = django_user_model.objects.get(username=result.username)
    assert admin.email and email_problem(admin.email) is None
