"""Tapis' job search (issue 27, Tapis item 8): getJobSearchList's query-parameter conditions
and getJobSearchListByPostSqlStr's SQL-like text, over the jobs getJobList lists (visibility,
listType, hidden jobs), bounded and refused field by field. tapipy drives them in
test_tapipy.py."""

from datetime import timedelta

import pytest
from django.utils import timezone

from accounts.models import Membership
from jobs.models import Job
from jobs.user_actions.services import job_submit
from tapis.api.search_language import CONDITIONS_MAX
from tapis.models import HiddenJob
from tapis.submit import tapis_job_submit
from tests.conftest import HELLO_WORLD
from tests.tapis.conftest import TAPIS, seed_request
from tests.tapis.openapi_facts import check

SEARCH = TAPIS + "jobs/search"


@pytest.fixture
def jobs(app, member, project, outsider, other_project, make_user):
    """alice's: a queued app job, a finished one named "other", a failed plain job (made a day
    earlier); her teammate's finished job; an outsider's finished job."""
    queued = tapis_job_submit(user=member, request=seed_request())
    finished = tapis_job_submit(user=member, request=seed_request(name="other"))
    failed = job_submit(user=member, project=project, document=dict(HELLO_WORLD))
    mate = make_user("carol")
    Membership.objects.create(user=mate, project=project)
    teammate = job_submit(user=mate, project=project, document=dict(HELLO_WORLD))
    theirs = job_submit(user=outsider, project=other_project, document=dict(HELLO_WORLD))
    Job.objects.filter(pk__in=[finished.pk, teammate.pk, theirs.pk]).update(status="FINISHED")
    day_before = timezone.now() - timedelta(days=1)
    Job.objects.filter(pk=failed.pk).update(status="FAILED", created=day_before)
    return {
        "queued": str(queued.uuid),
        "finished": str(finished.uuid),
        "failed": str(failed.uuid),
        "teammate": str(teammate.uuid),
        "theirs": str(theirs.uuid),
    }


def _uuids(answer) -> list[str]:
    assert answer.status_code == 200, answer.content
    return [job["uuid"] for job in answer.json()["result"]]


def test_query_parameter_conditions(jobs, tapis_member):
    get = tapis_member.get
    assert _uuids(get(SEARCH, {"status.eq": "FINISHED"})) == [jobs["finished"]]
    assert _uuids(get(SEARCH, {"status": "PENDING"})) == [jobs["queued"]]
    assert set(_uuids(get(SEARCH, {"appId": "classify"}))) == {jobs["queued"], jobs["finished"]}
    assert _uuids(get(SEARCH, {"name.like": "img-*"})) == [jobs["queued"]]
    assert _uuids(get(SEARCH, {"name.nlike": "img-*", "appId.neq": ""})) == [jobs["finished"]]
    both = get(SEARCH, {"status.in": "FINISHED,FAILED", "orderBy": "name(asc)"})
    assert _uuids(both) == [jobs["failed"], jobs["finished"]]  # hello-world < other
    since = (timezone.now() - timedelta(hours=1)).isoformat()
    assert jobs["failed"] not in _uuids(get(SEARCH, {"created.gt": since}))
    # listType as getJobList: the teammate's job is "shared"; the outsider's never shows.
    assert _uuids(get(SEARCH, {"status": "FINISHED", "listType": "SHARED_JOBS"})) == [
        jobs["teammate"]
    ]
    every = _uuids(get(SEARCH, {"listType": "ALL_JOBS", "computeTotal": "true"}))
    assert set(every) == {jobs[k] for k in ("queued", "finished", "failed", "teammate")}
    counted = get(SEARCH, {"listType": "ALL_JOBS", "computeTotal": "true", "limit": 1}).json()
    assert counted["metadata"]["totalCount"] == 4 and counted["metadata"]["recordCount"] == 1
    check(get(SEARCH, {"status": "FINISHED"}).json(), "RespGetJobList")


def test_sql_like_conditions(jobs, tapis_member):
    def post(*search, **params):
        query = "?" + "&".join(f"{k}={v}" for k, v in params.items()) if params else ""
        return tapis_member.post(SEARCH + query, {"search": list(search)}, format="json")

    found = post("(status = 'FINISHED' OR status = 'FAILED')", "AND NOT appId = 'nothing'")
    assert set(_uuids(found)) == {jobs["finished"], jobs["failed"]}
    assert _uuids(post("name LIKE 'img%' AND status IN ('PENDING', 'BLOCKED')")) == [jobs["queued"]]
    assert _uuids(post("project = 'vision' AND owner <> 'alice'", listType="ALL_JOBS")) == [
        jobs["teammate"]
    ]
    assert _uuids(post(f"uuid = '{jobs['theirs']}'", listType="ALL_JOBS")) == []
    single = tapis_member.post(SEARCH, {"search": "name = 'other'"}, format="json")
    assert _uuids(single) == [jobs["finished"]]
    # select=allAttributes: each job whole, in Tapis' Job shape.
    whole = post("name = 'other'", select="allAttributes")
    check(whole.json(), "RespJobSearchAllAttributes")
    assert whole.json()["result"][0]["visible"] is True
    assert whole.json()["result"][0]["appId"] == "classify"


def test_hidden_jobs_are_neither_listed_nor_found(jobs, tapis_member, member):
    finished = Job.objects.get(uuid=jobs["finished"])
    HiddenJob.objects.create(job=finished, hidden_by=member, hidden_at=timezone.now())
    assert jobs["finished"] not in _uuids(tapis_member.get(SEARCH))
    assert jobs["finished"] not in _uuids(tapis_member.get(TAPIS + "jobs/list"))
    assert tapis_member.get(f"{TAPIS}jobs/{jobs['finished']}").json()["result"]["visible"] is False


def test_bad_conditions_are_named(jobs, tapis_member):
    def errors(answer) -> list[str]:
        assert answer.status_code == 400, answer.content
        assert answer.json()["status"] == "error"
        return answer.json()["result"]["errors"]

    [unknown, op, value] = errors(
        tapis_member.get(SEARCH, {"nme.eq": "x", "status.gt": "A", "created.lt": "soon"})
    )
    assert unknown.startswith("nme.eq: unknown attribute 'nme'")
    assert op.startswith("status.gt: status: gt is not allowed")
    assert value.startswith("created.lt: created: 'soon' is not a date")
    assert "limit" in errors(tapis_member.get(SEARCH, {"limit": 5000}))[0]
    assert "select" in errors(tapis_member.get(SEARCH, {"select": "name"}))[0]
    [syntax] = errors(tapis_member.post(SEARCH, {"search": ["name = 'a' AND"]}, format="json"))
    assert syntax.startswith("search: at character 14: expected an attribute name")
    many = " OR ".join(["name = 'a'"] * (CONDITIONS_MAX + 1))
    [bound] = errors(tapis_member.post(SEARCH, {"search": [many]}, format="json"))
    assert f"at most {CONDITIONS_MAX} comparisons" in bound
    [shape] = errors(tapis_member.post(SEARCH, {"query": "name = 'a'"}, format="json"))
    assert shape.startswith("search: the body must be")
    [long] = errors(tapis_member.post(SEARCH, {"search": ["x" * 5000]}, format="json"))
    assert "at most 4096 characters" in long
    assert tapis_member.get(SEARCH, {"status.eq": "FOO"}).status_code == 400
