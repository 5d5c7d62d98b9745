"""The GPULab list page (``GET jobs``) is a plain queryset built at each request: it reads the
jobs of now and answers each viewer, filter, order and page by itself (memberships,
permissions and shares read at each request, nothing kept between them)."""

import pytest
from django.contrib.auth.models import Permission

from accounts.models import Membership
from tests.api.conftest import API, put_state
from tests.conftest import HELLO_WORLD

pytestmark = pytest.mark.django_db


def _names(answer) -> list[str]:
    return [item["name"] for item in answer.json()["items"]]


def test_a_page_reads_the_jobs_of_now(member_client, submit):
    first = submit({**_doc("one")})
    assert _names(member_client.get(API + "jobs?page_size=5")) == ["one"]
    submit({**_doc("two")})
    put_state(first, "RUNNING")
    answer = member_client.get(API + "jobs?page_size=5").json()
    assert [item["name"] for item in answer["items"]] == ["two", "one"]
    assert answer["items"][1]["state"]["status"] == "RUNNING"
    assert answer["total"] == 2


def test_each_page_filter_and_order_is_its_own_question(member_client, submit):
    for name in ("a", "b", "c"):
        submit(_doc(name))
    pages = [_names(member_client.get(API + f"jobs?page_size=1&page={page}")) for page in (1, 2, 3)]
    assert pages == [["c"], ["b"], ["a"]]
    assert _names(member_client.get(API + "jobs?page_size=3&sort=name")) == ["a", "b", "c"]
    assert _names(member_client.get(API + "jobs?page_size=3&sort=-name")) == ["c", "b", "a"]
    assert _names(member_client.get(API + "jobs?page_size=3&user_name=nobody")) == []
    assert _names(member_client.get(API + "jobs?page_size=3&user_name=alice")) == ["c", "b", "a"]


def test_viewers_never_share_an_answer(clients, submit, outsider):
    submit(_doc("members-only"))
    member = clients["member"].get(API + "jobs?page_size=5").json()["items"]
    other = clients["outsider"].get(API + "jobs?page_size=5").json()["items"]
    assert member[0]["name"] == "members-only"
    assert other[0]["name"] != "members-only"  # sanitised for a non-member
    # The same page again for each: each viewer still gets their own.
    assert clients["outsider"].get(API + "jobs?page_size=5").json()["items"] == other
    assert clients["member"].get(API + "jobs?page_size=5").json()["items"] == member


# A filter on a hidden field (the owner) matches only jobs the viewer sees in full: the
# member's job appears to the outsider once they may see it, their own job all along.
BY_OWNER = "jobs?page_size=5&user_name=alice,bob"


def test_joining_a_project_changes_the_question(
    outsider_client, outsider, project, other_project, submit
):
    submit(_doc("theirs"))
    submit(_doc("mine"), user=outsider, project=other_project)
    assert _names(outsider_client.get(API + BY_OWNER)) == ["mine"]
    Membership.objects.create(user=outsider, project=project)
    assert _names(outsider_client.get(API + BY_OWNER)) == ["mine", "theirs"]


def test_a_granted_permission_changes_the_question(
    outsider_client, outsider, other_project, submit
):
    submit(_doc("theirs"))
    submit(_doc("mine"), user=outsider, project=other_project)
    assert _names(outsider_client.get(API + BY_OWNER)) == ["mine"]
    outsider.user_permissions.add(Permission.objects.get(codename="view_job"))
    assert _names(outsider_client.get(API + BY_OWNER)) == ["mine", "theirs"]


def _doc(name: str) -> dict:
    return {**HELLO_WORLD, "name": name}
