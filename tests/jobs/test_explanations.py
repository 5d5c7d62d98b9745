"""Queued explanations live in their own table (JobExplanation), written by the tick only when
they change; a job that starts loses its row, a job that fails keeps its reason."""

import copy

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from jobs.models import Job, JobExplanation
from jobs.scheduler_bridge.tick import tick

pytestmark = pytest.mark.django_db


@pytest.fixture
def member_client(member):
    client = APIClient()
    client.force_authenticate(member)
    return client


def job_doc(hello_world, **resources):
    doc = copy.deepcopy(hello_world)
    doc["request"]["resources"].update(resources)
    return doc


def test_waiting_job_gets_an_explanation_row_written_only_when_it_changes(
    submit, hello_world, member_client
):
    submit(job_doc(hello_world, gpus=4))
    waiting = submit(job_doc(hello_world, gpus=4))
    first = tick()[-1]
    assert first["started"] == 1
    assert first["explanations_written"] == 1
    lines = JobExplanation.objects.get(job=waiting).lines
    assert lines and any("GPU" in line for line in lines)
    # Nothing changed: the next tick writes nothing.
    with CaptureQueriesContext(connection) as queries:
        again = tick()[-1]
    assert again["explanations_written"] == 0
    assert not [q for q in queries if "jobs_jobexplanation" in q["sql"].lower()
                and q["sql"].lstrip().upper().startswith(("INSERT", "WITH"))]  # fmt: skip
    # Every reader shows the same lines.
    api = member_client.get(f"/api/gpulab/v4.0/jobs/{waiting.uuid}").json()
    assert api["state"]["scheduling"]["queuedExplanations"] == lines
    explain = member_client.get(f"/api/portal/jobs/{waiting.uuid}/explain").json()
    assert explain["queued_explanations"] == lines


def test_a_started_job_loses_its_explanation(submit, hello_world, member_client):
    first = submit(job_doc(hello_world, gpus=4))
    second = submit(job_doc(hello_world, gpus=4))
    tick()
    assert JobExplanation.objects.filter(job=second).exists()
    # The running job ends (as the runtime would): room for the waiting one.
    Job.objects.filter(pk=first.pk).update(status="FINISHED", slave=None, gpu_ids=[], cpu_ids=[])
    summary = tick()[-1]
    assert summary["started"] == 1
    second.refresh_from_db()
    assert second.status == "ASSIGNED"
    assert not JobExplanation.objects.filter(job=second).exists()
    assert second.queued_explanations == []
    api = member_client.get(f"/api/gpulab/v4.0/jobs/{second.uuid}").json()
    assert api["state"]["scheduling"]["queuedExplanations"] == []


def test_a_failed_job_keeps_its_reason_as_explanation(submit, hello_world):
    submit(job_doc(hello_world, gpus=4))
    tick()
    doc = job_doc(hello_world, gpus=1)
    doc["request"]["scheduling"]["interactive"] = True
    interactive = submit(doc)
    tick()
    interactive.refresh_from_db()
    assert interactive.status == "FAILED"
    assert interactive.queued_explanations == [interactive.end_reason]


def test_job_list_reads_explanations_without_a_query_per_job(submit, hello_world, member_client):
    for _ in range(2):
        submit(job_doc(hello_world, gpus=4))
    tick()
    member_client.get("/api/gpulab/v4.0/jobs")  # first-request setup queries aside
    with CaptureQueriesContext(connection) as few:
        member_client.get("/api/gpulab/v4.0/jobs")
    for _ in range(4):
        submit(job_doc(hello_world, gpus=4))
    tick()
    assert JobExplanation.objects.count() == 5
    with CaptureQueriesContext(connection) as many:
        answer = member_client.get("/api/gpulab/v4.0/jobs").json()
    assert len(many) == len(few), [q["sql"][:150] for q in many.captured_queries]
    assert sum(bool(j["state"]["scheduling"]["queuedExplanations"]) for j in answer["items"]) == 5
