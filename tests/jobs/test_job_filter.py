"""One job filter: the web filter form and the API query parser build the same ``JobFilter``, and
its ``apply`` holds the privacy rule (hidden fields only filter fully visible jobs)."""

import pytest
from django.http import QueryDict
from django.test import Client
from rest_framework.test import APIClient

from jobs.api.filters import job_filter_from_query
from jobs.models import Job
from jobs.selectors import EVERY_STATE_BUT_DELETED, JobFilter
from jobs.states import GROUPS
from jobs.web.forms import JobFilterForm
from tests.api.conftest import API
from tests.web.factories import make_job

pytestmark = pytest.mark.django_db


def web_filter(query: str, project=None, cluster=None) -> JobFilter:
    form = JobFilterForm(
        QueryDict(query),
        projects=[project] if project else [],
        clusters=[cluster] if cluster else [],
    )
    return form.job_filter()


@pytest.mark.parametrize(
    ("web", "api"),
    [
        ("", ""),
        ("state=running", "running=true"),
        ("state=finished&user=alice", "finished=true&user_name=alice"),
        ("cluster=1&user=alice", "cluster_id=1&user_name=alice"),
    ],
)
def test_form_and_query_build_the_same_filter(cluster, web, api):
    assert web_filter(web, cluster=cluster) == job_filter_from_query(QueryDict(api))


def test_the_filter_reads_what_was_asked(cluster):
    assert web_filter("").statuses == EVERY_STATE_BUT_DELETED
    assert web_filter("state=running&mine=on").statuses == GROUPS["running"]
    assert web_filter("state=running&mine=on").only_own is True
    assert web_filter("q=job-abcdef12").uuid_prefix == "abcdef12"
    assert web_filter("q=hello").uuid_prefix == ""
    api = job_filter_from_query(
        QueryDict("user_urn=urn:publicid:IDN%2Bgpuportal.local%2Buser%2Balice&user_name=bob")
    )
    assert api.usernames == (frozenset({"alice"}), frozenset({"bob"}))


@pytest.fixture
def bobs_job(outsider, other_project, slave):
    return make_job(owner=outsider, project=other_project, name="bob-secret-run")


def test_hidden_fields_only_filter_fully_visible_jobs(member, outsider, admin_user, bobs_job):
    everyone = Job.objects.all()
    by_owner = JobFilter(usernames=(frozenset({"bob"}),))
    by_name = JobFilter(name_contains="secret")
    by_id = JobFilter(name_contains="zzz", uuid_prefix=str(bobs_job.uuid)[:8])
    # alice sees bob's job only sanitised: neither its owner nor its name finds it ...
    assert list(by_owner.apply(everyone, viewer=member)) == []
    assert list(by_name.apply(everyone, viewer=member)) == []
    # ... its id (shown to everybody) does; bob and an admin find it by every field.
    assert list(by_id.apply(everyone, viewer=member)) == [bobs_job]
    for viewer in (outsider, admin_user):
        assert list(by_owner.apply(everyone, viewer=viewer)) == [bobs_job]
        assert list(by_name.apply(everyone, viewer=viewer)) == [bobs_job]
    # gpulab-cli `jobs -u`: the running group of everybody is added, still without owners.
    running = JobFilter(usernames=(frozenset({"alice"}),), or_running=True)
    assert list(running.apply(everyone, viewer=member)) == []
    Job.objects.filter(pk=bobs_job.pk).update(status="RUNNING")
    assert list(running.apply(everyone, viewer=member)) == [bobs_job]


def test_web_and_api_both_filter_through_job_filter(member, bobs_job, monkeypatch):
    viewers = []
    original = JobFilter.apply

    def spy(self, queryset, *, viewer):
        viewers.append(self)
        return original(self, queryset, viewer=viewer)

    monkeypatch.setattr(JobFilter, "apply", spy)
    web = Client()
    web.force_login(member)
    html = web.get("/jobs/?user=bob").content.decode()
    assert str(bobs_job.uuid) not in html
    api = APIClient()
    api.force_login(member)
    listed = api.get(API + "jobs?user_name=bob")
    assert listed.status_code == 200 and str(bobs_job.uuid) not in listed.content.decode()
    assert [f.usernames for f in viewers] == [(frozenset({"bob"}),)] * 2
