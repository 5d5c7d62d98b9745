"""Webhooks of a real job on real Docker: a receiver gets signed deliveries for RUNNING and
FINISHED, sent because jobs announced each status (jobs.signals.job_status_changed) and the
notifications app answered, with the worker and the watcher of the Docker tests."""

import time

import pytest

from tests.integration.test_jobs_e2e import (  # noqa: F401 (fixtures)
    job,
    local,
    people,
    runtime,
    submit,
    wait_for,
    watcher,
)
from tests.notifications.test_subscriptions import Receiver, verify

pytestmark = [pytest.mark.docker, pytest.mark.django_db(transaction=True)]


def test_a_webhook_receiver_gets_signed_deliveries_for_running_and_finished(
    people,  # noqa: F811
    local,  # noqa: F811
    watcher,  # noqa: F811
    settings,
):
    receiver = Receiver()
    settings.PORTAL_WEBHOOK_ALLOWED_HOSTS = [f"127.0.0.1:{receiver.port}"]
    try:
        watcher()
        doc = job("sh -c 'sleep 1; echo done > $JOB_OUTPUT_DIR/done.txt'")
        doc["request"]["notifications"] = {
            "subscriptions": [
                {
                    "eventTypes": ["RUNNING", "FINISHED"],
                    "deliveryTargets": [
                        {"deliveryMethod": "WEBHOOK", "deliveryAddress": receiver.url}
                    ],
                }
            ]
        }
        done = wait_for(submit(people, doc), "FINISHED", "FAILED", timeout=60)
        assert done.status == "FINISHED", done.end_reason
        deadline = time.monotonic() + 10
        rows = done.deliveries.order_by("id")
        # The worker records a delivery after the receiver has answered it: wait for both.
        while (len(receiver.requests) < 2 or rows.count() < 2) and time.monotonic() < deadline:
            time.sleep(0.1)
        events = [verify(done, headers, body)["event"] for headers, body in receiver.requests]
        assert events == ["RUNNING", "FINISHED"]
        assert [(r.event, r.ok, r.status_code) for r in rows] == [
            ("RUNNING", True, 200),
            ("FINISHED", True, 200),
        ]
    finally:
        receiver.close()
