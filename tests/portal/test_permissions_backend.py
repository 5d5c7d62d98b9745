"""accounts.backends.PortalModelBackend reads a user's permissions in one query and answers
exactly what Django's ModelBackend answers (direct, through groups, inactive, superuser)."""

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import Group, Permission
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts.backends import PortalModelBackend

pytestmark = pytest.mark.django_db


def _perm(label: str) -> Permission:
    app, codename = label.split(".")
    return Permission.objects.get(content_type__app_label=app, codename=codename)


def _fresh(user):
    return get_user_model().objects.get(pk=user.pk)  # no permission cache


@pytest.fixture
def people():
    User = get_user_model()
    direct = User.objects.create_user("direct")
    direct.user_permissions.add(_perm("jobs.view_job"))
    grouped = User.objects.create_user("grouped")
    admins, viewers = Group.objects.create(name="admins"), Group.objects.create(name="viewers")
    admins.permissions.add(_perm("jobs.change_job"), _perm("jobs.view_job"))
    viewers.permissions.add(_perm("reservations.view_reservation"), _perm("jobs.view_job"))
    grouped.groups.add(admins, viewers)
    both = User.objects.create_user("both")
    both.user_permissions.add(_perm("jobs.delete_job"), _perm("jobs.view_job"))
    both.groups.add(viewers)
    inactive = User.objects.create_user("inactive", is_active=False)
    inactive.user_permissions.add(_perm("jobs.view_job"))
    nobody = User.objects.create_user("nobody")
    Group.objects.create(name="empty").user_set.add(nobody)
    superuser = User.objects.create_superuser("root", password="x")
    return [direct, grouped, both, inactive, nobody, superuser]


def test_the_same_permissions_as_djangos_backend(people):
    portal, django = PortalModelBackend(), ModelBackend()
    answers = {}
    for user in people:
        mine = portal.get_all_permissions(_fresh(user))
        assert mine == django.get_all_permissions(_fresh(user)), user.username
        answers[user.username] = mine
    assert answers["grouped"] == {
        "jobs.change_job",
        "jobs.view_job",
        "reservations.view_reservation",
    }
    assert answers["both"] == {"jobs.delete_job", "jobs.view_job", "reservations.view_reservation"}
    assert answers["inactive"] == answers["nobody"] == set()
    assert len(answers["root"]) == Permission.objects.count()


def test_one_query_then_the_cache(people):
    user = _fresh(people[2])
    with CaptureQueriesContext(connection) as queries:
        assert user.has_perm("jobs.delete_job")
        assert user.has_perm("reservations.view_reservation")
        assert not user.has_perm("jobs.change_job")
    assert len(queries) == 1


def test_the_site_uses_it(people):
    from django.contrib.auth import get_backends

    from accounts.directory.ldap_backend import PortalLDAPBackend
    from accounts.directory.oidc_backend import PortalOIDCBackend

    # The portal's own backend first; the directory sign-ins (docs/sign-in.md) after it, which
    # authenticate only when configured and leave permissions to the portal's backend.
    assert [type(b) for b in get_backends()] == [
        PortalModelBackend, PortalLDAPBackend, PortalOIDCBackend
    ]  # fmt: skip
