"""``sole_project_of`` (a submit that names no project): one plain query, whose answer
follows the user's memberships as they change."""

import pytest
from django.contrib.auth.models import AnonymousUser

from accounts.models import Membership, Project
from accounts.selectors import project_ids_of, projects_of, sole_project_of

pytestmark = pytest.mark.django_db


def test_the_answer_follows_the_memberships(make_user):
    user = make_user("carol")
    assert sole_project_of(user) == (None, 0)
    first = Project.objects.create(name="first", gid=6201, description="one")
    Membership.objects.create(user=user, project=first)
    user = type(user).objects.get(pk=user.pk)  # a new request's user (no cached ids)
    sole, count = sole_project_of(user)
    assert count == 1 and sole == first
    assert [sole.name, sole.description, sole.gid, sole.created] == [
        first.name, first.description, first.gid, first.created
    ]  # fmt: skip
    assert sole._state.adding is False and sole._state.db == "default"
    assert user._portal_project_ids == {first.pk}
    second = Project.objects.create(name="second", gid=6202)
    Membership.objects.create(user=user, project=second)
    assert sole_project_of(type(user).objects.get(pk=user.pk)) == (None, 2)
    assert list(projects_of(user)) == [first, second]


def test_one_query_per_user(make_user, project, django_assert_num_queries):
    users = [make_user(name) for name in ("dan", "erin")]
    for user in users:
        Membership.objects.create(user=user, project=project)
    for user in users:
        fresh = type(user).objects.get(pk=user.pk)  # a new request's user
        with django_assert_num_queries(1):
            assert sole_project_of(fresh) == (project, 1)


def test_nobody_has_a_project():
    assert sole_project_of(AnonymousUser()) == (None, 0)


def test_project_ids_follow_the_memberships(make_user, project, other_project):
    user = make_user("frank")
    fresh = lambda: type(user).objects.get(pk=user.pk)  # noqa: E731  (a new request's user)
    assert project_ids_of(fresh()) == set()
    Membership.objects.create(user=user, project=project)
    assert project_ids_of(fresh()) == {project.pk}
    Membership.objects.create(user=user, project=other_project)
    assert project_ids_of(fresh()) == {project.pk, other_project.pk}
    Membership.objects.filter(user=user, project=project).delete()
    assert project_ids_of(fresh()) == {other_project.pk}
