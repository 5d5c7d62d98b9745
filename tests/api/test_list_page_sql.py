"""A list page's SQL is kept per viewer, filter and page (jobs.api.list_page, core.compiled_sql):
a kept query must answer exactly what a freshly built one answers, read today's jobs, and never
serve one viewer's question to another whose memberships, permissions or filter differ."""

import uuid
from datetime import UTC, datetime

import pytest
from django.contrib.auth.models import Permission

from accounts.models import Membership
from core.compiled_sql import CompiledRows
from jobs.api import list_page
from jobs.models import Job
from tests.api.conftest import API, put_state
from tests.conftest import HELLO_WORLD
from tests.support.postgres import ON_BOTH_DATABASES, run_check_on

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _empty_cache():
    list_page._PAGES.clear()
    yield
    list_page._PAGES.clear()


def _names(answer) -> list[str]:
    return [item["name"] for item in answer.json()["items"]]


def test_a_kept_page_reads_the_jobs_of_now(member_client, submit):
    first = submit({**_doc("one")})
    assert _names(member_client.get(API + "jobs?page_size=5")) == ["one"]
    built = list_page._PAGES.misses
    submit({**_doc("two")})
    put_state(first, "RUNNING")
    answer = member_client.get(API + "jobs?page_size=5").json()
    assert list_page._PAGES.misses == built  # the same question, not built again
    assert [item["name"] for item in answer["items"]] == ["two", "one"]
    assert answer["items"][1]["state"]["status"] == "RUNNING"
    assert answer["total"] == 2


def test_each_page_filter_and_order_is_its_own_question(member_client, submit):
    for name in ("a", "b", "c"):
        submit(_doc(name))
    pages = [_names(member_client.get(API + f"jobs?page_size=1&page={page}")) for page in (1, 2, 3)]
    assert pages == [["c"], ["b"], ["a"]]
    assert list_page._PAGES.misses == 1  # every page of one list is one kept query
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


def test_a_query_django_finds_empty_answers_no_rows():
    rows = CompiledRows(maxsize=4)
    empty = lambda: Job.objects.filter(pk__in=[]).values_list("pk")  # noqa: E731
    assert rows.rows("empty", empty) == [] and rows.rows("empty", empty) == []
    assert rows.misses == 1


def test_the_oldest_question_is_forgotten_first(member, project):
    rows = CompiledRows(maxsize=2)
    for key in ("a", "b", "a", "c", "a", "b"):
        rows.rows(key, lambda: Job.objects.values_list("pk"))
    # a, b built; a kept (used); c evicts b; a kept; b built again
    assert rows.misses == 4


def _doc(name: str) -> dict:
    return {**HELLO_WORLD, "name": name}


def check_rows_as_django_reads_them() -> dict:
    """CompiledRows against Django's own values_list for columns with converters (times,
    UUIDs, booleans, JSON, nulls); run on SQLite in-process and on PostgreSQL."""
    from django.contrib.auth import get_user_model

    from accounts.models import Project

    user = get_user_model().objects.create(username=f"u{uuid.uuid4().hex[:8]}")
    project = Project.objects.create(name=f"p{uuid.uuid4().hex[:8]}", gid=6101)
    when = datetime(2026, 11, 23, 4, 5, 6, 789000, tzinfo=UTC)
    for index, interactive in enumerate((True, False, True)):
        Job.objects.create(
            name=f"job{index}",
            owner=user,
            project=project,
            status="QUEUED",
            status_updated=when,
            created=when,
            interactive=interactive,
            gpus=1,
            cpus=1,
            cpu_memory_gb=1,
            min_duration_s=1,
            max_duration_s=2,
            request={"docker": {"image": "x"}, "index": index},
            gpu_ids=[index],
            exit_code=None if index else 3,
        )
    columns = (
        "uuid",
        "created",
        "interactive",
        "request",
        "gpu_ids",
        "exit_code",
        "owner__username",
    )

    def build():
        return Job.objects.filter(project=project).order_by("id").values_list(*columns)

    kept = CompiledRows(maxsize=4)
    first, again = (kept.rows("k", build, window=slice(0, 2)) for _ in range(2))
    misses = kept.misses
    everything = Job.objects.filter(project=project).order_by("id").values_list(*columns)
    windows = [(0, 1), (1, 3), (0, 50), (2, 2), (3, 9), (100, 150)]
    paged = {
        f"{start}:{stop}": kept.rows("all", lambda: everything, window=slice(start, stop))
        == list(everything[start:stop])
        for start, stop in windows
    }
    return {
        "same": first == list(build()[:2]) == again,
        "misses": misses,
        "paged": paged,
        "paged_misses": kept.misses - 1,
        "rows": len(first),
        "types": [type(value).__name__ for value in first[0]],
    }


def _assert_read_as_django(result: dict) -> None:
    assert result["same"] and result["misses"] == 1 and result["rows"] == 2, result
    assert all(result["paged"].values()) and result["paged_misses"] == 1, result
    assert result["types"][:3] == ["UUID", "datetime", "bool"], result


@ON_BOTH_DATABASES
def test_rows_are_read_as_django_reads_them(database, tmp_path):
    _assert_read_as_django(run_check_on(database, check_rows_as_django_reads_them, tmp_path))
