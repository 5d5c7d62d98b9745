"""Tapis' subscriptions with tapipy itself (issue 27, Tapis item 7), over a live server: a job
submitted with a subscription, then ``jobs.subscribe``, ``getSubscriptions``,
``deleteSubscriptions`` (one, and all of a job's), a refused webhook host; a real local HTTP
receiver gets the deliveries, each Tapis' Notification with Tapis' event type and status,
signed with the job's webhook secret.

tapipy lives in a throwaway virtual environment of its own (tests/support/clients.py): without
a network to install it the test skips, and fails under PORTAL_REQUIRE_CLI=1 (CI)."""

import io
import json
import subprocess
import uuid
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from accounts.models import Membership, Project
from jobs.models import Job
from notifications.models import JobDelivery
from tapis.services import app_create
from tests.notifications.test_subscriptions import Receiver, verify
from tests.support.clients import tapipy_python
from tests.support.runtime import TEST_IMAGE, add_slave
from tests.support.scripted_engine import Behaviour

SCRIPT = r"""
import json, sys
from tapipy.tapis import Tapis
from tapipy.errors import BaseTapyException

base_url, token, hook, later = sys.argv[1:5]
client = Tapis(base_url=base_url, access_token=token, tenant_id="portal")
jobs = client.jobs
target = {"deliveryMethod": "WEBHOOK", "deliveryAddress": hook}
job = jobs.submitJob(name="watched", appId="hello", appVersion="1.0", execSystemId="1",
                     notes={"scheduling": {"notBefore": later}},
                     subscriptions=[{"eventCategoryFilter": "JOB_NEW_STATUS",
                                     "deliveryTargets": [target]}])
out = {"uuid": job.uuid}
made = jobs.subscribe(jobUuid=job.uuid, description="my events",
                      eventCategoryFilter="JOB_USER_EVENT", deliveryTargets=[target],
                      ttlminutes=60)
out["url"] = made.url
out["subscriptions"] = [[s.typeFilter, s.ttlMinutes, s.subjectFilter, s.description]
                        for s in jobs.getSubscriptions(jobUuid=job.uuid)]
jobs.sendEvent(jobUuid=job.uuid, eventData="checkpoint 1", eventDetail="PROGRESS")
out["deleted_one"] = jobs.deleteSubscriptions(uuid=made.url.rsplit("/", 1)[-1]).changes
jobs.sendEvent(jobUuid=job.uuid, eventData="nobody hears this")
out["left"] = [s.typeFilter for s in jobs.getSubscriptions(jobUuid=job.uuid)]
try:
    jobs.subscribe(jobUuid=job.uuid, eventCategoryFilter="ALL",
                   deliveryTargets=[{"deliveryMethod": "WEBHOOK",
                                     "deliveryAddress": "https://elsewhere.example.com/x"}])
except BaseTapyException as exc:
    out["refused"] = str(exc)
jobs.cancelJob(jobUuid=job.uuid)
out["after_end"] = [s.uuid for s in jobs.getSubscriptions(jobUuid=job.uuid)]
out["deleted_all"] = jobs.deleteSubscriptions(uuid=job.uuid).changes
print(json.dumps(out))
"""


@pytest.fixture
def world(transactional_db, settings, django_user_model, scripted_engines):
    """alice in project demo with her app "hello", a slave on the scripted engine, tasks inline
    in the live server's thread, a webhook receiver the site allows, and a Tapis token."""
    scripted_engines.script({"echo hello": Behaviour(output=["hello"])})
    settings.PORTAL_TASK_MODE = "inline"
    settings.PORTAL_INSTANCE = f"test-{uuid.uuid4().hex[:12]}"
    settings.PORTAL_WEBHOOK_RETRY_DELAYS_S = [10, 60, 300]
    user = django_user_model.objects.create_user("alice", "alice@example.org", "pw")
    Membership.objects.create(user=user, project=Project.objects.create(name="demo", gid=4100))
    add_slave("scripted", f"fake://tapipy-{uuid.uuid4().hex[:8]}")
    app_create(
        user=user,
        definition={
            "id": "hello",
            "version": "1.0",
            "containerImage": TEST_IMAGE,
            "command": "echo hello",
            "jobAttributes": {"resources": {"gpus": 0, "cpus": 1, "cpuMemoryGb": 1}},
        },
    )
    issued = io.StringIO()
    call_command("tapis_token", "alice", stdout=issued)
    receiver = Receiver()
    settings.PORTAL_WEBHOOK_ALLOWED_HOSTS = [f"127.0.0.1:{receiver.port}"]
    yield issued.getvalue().strip(), receiver
    receiver.close()


def test_tapipy_subscribes_lists_deletes_and_a_receiver_gets_tapis_notifications(
    world, live_server
):
    jwt, receiver = world
    later = (timezone.now() + timedelta(days=1)).isoformat()
    done = subprocess.run(
        [
            str(tapipy_python()),
            "-c",
            SCRIPT,
            f"{live_server.url}/api/tapis",
            jwt,
            receiver.url,
            later,
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    job = Job.objects.get(uuid=out["uuid"])

    assert out["url"].startswith(f"{live_server.url}/api/tapis/v3/jobs/subscribe/")
    assert out["subscriptions"] == [
        ["jobs.JOB_NEW_STATUS.*", 10080, out["uuid"], ""],
        ["jobs.JOB_USER_EVENT.*", 60, out["uuid"], "my events"],
    ]
    assert out["deleted_one"] == 1 and out["left"] == ["jobs.JOB_NEW_STATUS.*"]
    assert "elsewhere.example.com is not in this site's webhook allow-list" in out["refused"]
    # The job's last status expired its subscriptions, as Tapis deletes them.
    assert out["after_end"] == [] and out["deleted_all"] == 0
    assert job.status == "CANCELLED"

    bodies = []
    for headers, body in receiver.requests:
        document = verify(job, headers, body)  # signed with the job's webhook secret
        bodies.append(document)
    events = [(b["event"]["type"], json.loads(b["event"]["data"])) for b in bodies[::2]]
    assert [b["event"]["type"] for b in bodies] == [
        "jobs.JOB_NEW_STATUS.PENDING",
        "jobs.JOB_USER_EVENT.PROGRESS",
        "jobs.JOB_NEW_STATUS.CANCELLED",
    ]
    assert [(d["oldJobStatus"], d["newJobStatus"]) for _, d in events] == [
        (None, "PENDING"),
        ("PENDING", "CANCELLED"),
    ]
    assert bodies[1]["event"]["data"] == "checkpoint 1"  # the sender's eventData, as sent
    assert bodies[2]["event"]["deleteSubscriptionsMatchingSubject"] is True
    assert {b["event"]["subject"] for b in bodies} == {out["uuid"]}
    assert [(d.event, d.ok) for d in JobDelivery.objects.filter(job=job).order_by("id")] == [
        ("jobs.JOB_NEW_STATUS.PENDING", True),
        ("jobs.JOB_USER_EVENT.PROGRESS", True),
        ("jobs.JOB_NEW_STATUS.CANCELLED", True),
    ]
