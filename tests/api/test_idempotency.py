"""Submissions with an ``Idempotency-Key``: a retry never creates a second job."""

import threading

import pytest
from rest_framework.test import APIClient

from jobs.models import Job, SubmitIdempotencyKey
from jobs.submit import idempotency
from tests.api.conftest import API
from tests.conftest import HELLO_WORLD

pytestmark = pytest.mark.django_db


def test_retry_with_the_same_key_answers_the_same_job(submit_api):
    first = submit_api(HTTP_IDEMPOTENCY_KEY="k-1")
    again = submit_api(HTTP_IDEMPOTENCY_KEY="k-1")
    assert first.status_code == again.status_code == 201
    assert again.content == first.content
    assert again["Location"] == first["Location"]
    assert again["Idempotent-Replayed"] == "true"
    assert Job.objects.count() == 1
    assert str(Job.objects.get().uuid) == first.content.decode()
    other = submit_api(HTTP_IDEMPOTENCY_KEY="k-2")
    assert other.status_code == 201 and other.content != first.content
    assert Job.objects.count() == 2
    assert submit_api().content not in (first.content, other.content)  # no key: a new job


def test_same_key_for_another_request_is_422(submit_api):
    assert submit_api(HTTP_IDEMPOTENCY_KEY="k").status_code == 201
    changed = dict(HELLO_WORLD, name="Other")
    response = submit_api(changed, HTTP_IDEMPOTENCY_KEY="k")
    assert response.status_code == 422
    assert (
        "Idempotency-Key 'k' was already used for a different request" in response.json()["error"]
    )
    held = submit_api(query="?hold=true", HTTP_IDEMPOTENCY_KEY="k")
    assert held.status_code == 422  # the query is part of the request too
    assert Job.objects.count() == 1


def test_keys_are_per_user(submit_api, admin_client):
    mine = submit_api(HTTP_IDEMPOTENCY_KEY="shared")
    document = dict(HELLO_WORLD, owner={"projectUrn": "vision"})
    theirs = submit_api(document, client=admin_client, HTTP_IDEMPOTENCY_KEY="shared")
    assert mine.status_code == theirs.status_code == 201
    assert mine.content != theirs.content
    assert SubmitIdempotencyKey.objects.count() == 2


def test_malformed_key_is_400_naming_the_header(submit_api):
    response = submit_api(HTTP_IDEMPOTENCY_KEY="x" * 256)
    assert response.status_code == 400
    assert response.json()["errors"] == [
        "Idempotency-Key (header): must be 1-255 printable ASCII characters"
    ]
    assert Job.objects.count() == 0


def test_a_refused_submission_keeps_no_key(submit_api):
    bad = dict(HELLO_WORLD, request={"resources": {"gpus": -1}, "docker": {"image": "x"}})
    assert submit_api(bad, HTTP_IDEMPOTENCY_KEY="k").status_code == 400
    assert SubmitIdempotencyKey.objects.count() == 0
    # The client fixes the job and retries with the same key: accepted.
    assert submit_api(HTTP_IDEMPOTENCY_KEY="k").status_code == 201
    assert Job.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_concurrent_double_submit_creates_one_job(member, project, slave, monkeypatch):
    """Both requests pass the "key unknown" check before either commits: the unique constraint
    lets one commit and the other rolls back whole and answers the winner's answer."""
    from accounts.tokens import api_token_rotate

    _, key = api_token_rotate(user=member)
    both_checked = threading.Barrier(2, timeout=10)
    real_replay = idempotency._replay
    calls = threading.local()

    def replay_after_both_checked(**kwargs):
        answer = real_replay(**kwargs)
        if not getattr(calls, "done", False):
            calls.done = True
            both_checked.wait()
        return answer

    monkeypatch.setattr(idempotency, "_replay", replay_after_both_checked)
    from jobs.user_actions import services

    real_submit, submitted = services.job_submit, []

    def counting_submit(**kwargs):
        submitted.append(1)
        return real_submit(**kwargs)

    monkeypatch.setattr(services, "job_submit", counting_submit)
    results = []

    def post():
        import json

        from django.db import connection

        try:
            client = APIClient()
            client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
            response = client.post(
                API + "jobs",
                data=json.dumps(HELLO_WORLD),
                content_type="application/json",
                HTTP_IDEMPOTENCY_KEY="race",
            )
            results.append((response.status_code, response.content))
        finally:
            connection.close()

    threads = [threading.Thread(target=post) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert len(results) == 2
    assert [status for status, _ in results] == [201, 201]
    assert results[0][1] == results[1][1]
    assert len(submitted) == 2  # both created a job; one of them was rolled back
    assert Job.objects.count() == 1
    assert SubmitIdempotencyKey.objects.get().job.uuid.hex == results[0][1].decode().replace(
        "-", ""
    )
