"""The job list loads only the columns the presenter shows (jobs.api.gpulab_json.LIST_COLUMNS)
and counts by state cheaply (JobFilter.count): each listed item must still equal the job's own
read, for every kind of viewer and job, with no query per listed job, and ``total`` must be
the number of jobs the filter selects."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from jobs.models import Job
from jobs.user_actions.shares import job_share_create
from tests.api.conftest import API, put_state
from tests.api.test_shapes import _rich_job

pytestmark = pytest.mark.django_db


def _jobs_in_every_kind_of_state(submit, slave, outsider):
    jobs = [_rich_job(submit, slave), submit()]  # running with everything; queued
    jobs.append(put_state(submit(), "FINISHED", slave=slave, gpu_ids=[1], exit_code=0))
    jobs.append(put_state(submit(), "HALTED", slave=slave, gpu_ids=[0]))
    jobs.append(put_state(submit(), "CANCELLED", slave=slave))  # never started
    jobs.append(put_state(submit(), "QUEUED", queued_explanations=["waits for a GPU"]))
    shared = submit()
    job_share_create(job=shared, user=shared.owner, grantee_user=outsider)
    jobs.append(shared)
    return jobs


@pytest.mark.parametrize("who", ["member", "outsider", "admin"])
def test_each_listed_job_equals_its_own_read(clients, submit, slave, outsider, who):
    jobs = _jobs_in_every_kind_of_state(submit, slave, outsider)
    client = clients[who]
    listed = client.get(API + "jobs?page_size=50").json()
    assert listed["total"] == len(jobs)
    by_uuid = {item["uuid"]: item for item in listed["items"]}
    assert set(by_uuid) == {str(j.uuid) for j in jobs}
    for job in jobs:
        assert by_uuid[str(job.uuid)] == client.get(f"{API}jobs/{job.uuid}").json(), job.status


def test_the_list_costs_the_same_queries_for_one_job_and_for_many(
    member_client, submit, slave, outsider
):
    put_state(submit(), "RUNNING", slave=slave, gpu_ids=[0])  # one prefetch of slave GPUs
    member_client.get(API + "jobs")  # first-request setup aside
    with CaptureQueriesContext(connection) as few:
        member_client.get(API + "jobs?page_size=50")
    _jobs_in_every_kind_of_state(submit, slave, outsider)
    with CaptureQueriesContext(connection) as many:
        answer = member_client.get(API + "jobs?page_size=50").json()
    assert len(answer["items"]) == 8
    assert len(many) == len(few), [q["sql"][:120] for q in many.captured_queries]


@pytest.mark.parametrize(
    "query",
    ["", "?deleted=true", "?finished=true", "?allowed_states=QUEUED,RUNNING", "?running=true"],
)
def test_total_counts_what_the_filter_selects(member_client, submit, slave, outsider, query):
    jobs = _jobs_in_every_kind_of_state(submit, slave, outsider)
    put_state(jobs[1], "DELETED", slave=slave)
    answer = member_client.get(API + "jobs" + query + ("&" if query else "?") + "page_size=200")
    body = answer.json()
    assert answer.status_code == 200, body
    assert body["total"] == len(body["items"])
    if query == "":
        assert body["total"] == Job.objects.exclude(status="DELETED").count() == len(jobs) - 1


def test_a_changed_json_column_is_listed_as_changed(member_client, submit, slave):
    """Listed JSON values are remembered by their stored text (gpulab_json._stored_json): a
    job whose JSON columns change is listed with the new values, never the remembered ones."""
    job = put_state(submit(), "RUNNING", slave=slave, gpu_ids=[0])
    first = member_client.get(API + "jobs?page_size=50").json()["items"][0]
    assert first["state"]["resources"]["gpuIds"] == [0]
    request = dict(job.request, docker={**job.request["docker"], "command": ["echo", "again"]})
    Job.objects.filter(pk=job.pk).update(gpu_ids=[1], request=request)
    listed = member_client.get(API + "jobs?page_size=50").json()["items"][0]
    assert listed["state"]["resources"]["gpuIds"] == [1]
    assert listed["request"]["docker"]["command"] == ["echo", "again"]
    assert listed == member_client.get(f"{API}jobs/{job.uuid}").json()
