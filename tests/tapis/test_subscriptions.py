"""Tapis' subscriptions (issue 27, Tapis item 7): ``/v3/jobs/subscribe/{uuid}`` creates, lists
and deletes them (who may, bounds, the allow-list, refusals named by field); a submit's
subscriptions become the same rows; deliveries to a real local HTTP receiver are Tapis'
Notification with Tapis event types and statuses, signed with the job's webhook secret, retried
with the same notice; sendEvent reaches JOB_USER_EVENT subscribers. tapipy drives the routes in
test_subscriptions_tapipy.py."""

import json
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from accounts.models import Membership
from core import tasks
from jobs.models import Job
from jobs.spec import SpecError
from jobs.transitions import Stage, job_stage_record, job_transition
from jobs.user_actions.shares import job_share_create
from notifications.models import JobDelivery, JobSubscription
from notifications.notices import job_notice_publish, type_filter_matches
from notifications.subscriptions import deliveries_retry_due
from notifications.web import job_deliveries_section
from tapis.notices import on_job_status_changed
from tapis.shapes import job_to_tapis
from tapis.submit import tapis_job_submit
from tapis.subscriptions import TTL_DEFAULT_MINUTES, TTL_MAX_MINUTES
from tests.notifications.test_subscriptions import Receiver, verify
from tests.tapis.conftest import TAPIS, seed_request, tapis_client
from tests.tapis.openapi_facts import check

NOTICE_TASK = "notifications.tasks.job_notice_deliver"
# What a Tapis subscriber's webhook receives: Notification and Event of Tapis' Notifications API.
NOTIFICATIONS = json.loads(
    Path(__file__).with_name("tapis_notifications_openapi.json").read_text()
)["schemas"]


@pytest.fixture
def job(app, member):
    return tapis_job_submit(user=member, request=seed_request())


@pytest.fixture
def receiver(settings):
    server = Receiver()
    settings.PORTAL_WEBHOOK_ALLOWED_HOSTS = [f"127.0.0.1:{server.port}"]
    yield server
    server.close()


@pytest.fixture
def inline(settings, django_capture_on_commit_callbacks):
    """Run ``action`` with tasks run inline after its commit, as a worker would."""
    settings.PORTAL_WEBHOOK_RETRY_DELAYS_S = [10, 60, 300]

    def run(action):
        settings.PORTAL_TASK_MODE = "inline"
        try:
            with django_capture_on_commit_callbacks(execute=True):
                return action()
        finally:
            settings.PORTAL_TASK_MODE = "record"

    return run


def _subscribe(client, job, *targets, category="ALL", **fields):
    body = {
        "eventCategoryFilter": category,
        "deliveryTargets": [
            {"deliveryMethod": method, "deliveryAddress": address} for method, address in targets
        ],
        **fields,
    }
    return client.post(f"{TAPIS}jobs/subscribe/{job.uuid}", body, format="json")


def _notifications(receiver, job) -> list[dict]:
    """Every body the receiver got, its signature checked with the job's secret."""
    bodies = []
    for headers, body in receiver.requests:
        document = verify(job, headers, body)
        assert headers["X-Portal-Event"] == document["event"]["type"]
        check(document, "Notification", schemas=NOTIFICATIONS)
        bodies.append(document)
    return bodies


def _replay_recorded():
    """Run the notice deliveries recorded so far (a worker taking them from the queue)."""
    recorded = [args for path, args in tasks.recorded if path == NOTICE_TASK]
    tasks.recorded.clear()
    for args in recorded:
        tasks.resolve(NOTICE_TASK)(*args)
    return recorded


# --- the routes ---------------------------------------------------------------------------------


def test_subscribe_list_and_delete(job, tapis_member, member, make_user, project, outsider):
    made = _subscribe(
        tapis_member, job, ("EMAIL", "me@example.org"), description="tell me", ttlminutes=60
    )
    assert made.status_code == 200, made.content
    check(made.json(), "RespResourceUrl")
    url = made.json()["result"]["url"]
    sub_uuid = url.rstrip("/").rsplit("/", 1)[-1]
    assert url.endswith(f"/api/tapis/v3/jobs/subscribe/{sub_uuid}")
    second = _subscribe(tapis_member, job, ("EMAIL", "ops@example.org"), category="JOB_USER_EVENT")
    assert second.status_code == 200

    listed = tapis_member.get(f"{TAPIS}jobs/subscribe/{job.uuid}")
    assert listed.status_code == 200, listed.content
    check(listed.json(), "RespGetSubscriptions")
    first, other = listed.json()["result"]
    assert first["uuid"] == sub_uuid and first["subjectFilter"] == str(job.uuid)
    assert (first["typeFilter"], other["typeFilter"]) == ("jobs.*.*", "jobs.JOB_USER_EVENT.*")
    assert first["deliveryTargets"] == [
        {"deliveryMethod": "EMAIL", "deliveryAddress": "me@example.org"}
    ]
    assert (first["description"], first["owner"], first["enabled"]) == ("tell me", "alice", True)
    assert first["ttlMinutes"] == 60 and first["expiry"] > first["created"]
    # The url names the one subscription.
    one = tapis_member.get(f"{TAPIS}jobs/subscribe/{sub_uuid}").json()["result"]
    assert [s["uuid"] for s in one] == [sub_uuid]
    paged = tapis_member.get(f"{TAPIS}jobs/subscribe/{job.uuid}?skip=1&limit=5").json()
    assert [s["uuid"] for s in paged["result"]] == [other["uuid"]]

    # A project mate reads them but may not change them; someone the job is shared with reads
    # too; an outsider learns nothing.
    mate = make_user("carol")
    Membership.objects.create(user=mate, project=project)
    carol = tapis_client(mate)
    assert len(carol.get(f"{TAPIS}jobs/subscribe/{job.uuid}").json()["result"]) == 2
    refused = _subscribe(carol, job, ("EMAIL", "carol@example.org"))
    assert refused.status_code == 403 and "owner or an admin" in refused.json()["message"]
    assert carol.delete(f"{TAPIS}jobs/subscribe/{sub_uuid}").status_code == 403
    stranger = tapis_client(outsider)
    assert stranger.get(f"{TAPIS}jobs/subscribe/{job.uuid}").status_code == 404
    assert stranger.delete(f"{TAPIS}jobs/subscribe/{sub_uuid}").status_code == 404
    job_share_create(job=job, user=member, grantee_user=outsider, grantee_project=None)
    assert len(stranger.get(f"{TAPIS}jobs/subscribe/{job.uuid}").json()["result"]) == 2
    assert _subscribe(stranger, job, ("EMAIL", "x@example.org")).status_code == 403
    assert stranger.delete(f"{TAPIS}jobs/subscribe/{job.uuid}").status_code == 403

    gone = tapis_member.delete(f"{TAPIS}jobs/subscribe/{sub_uuid}")
    assert gone.status_code == 200 and gone.json()["result"] == {"changes": 1}
    check(gone.json(), "RespBasic")
    assert tapis_member.delete(f"{TAPIS}jobs/subscribe/{sub_uuid}").status_code == 404
    _subscribe(tapis_member, job, ("EMAIL", "me@example.org"))
    every = tapis_member.delete(f"{TAPIS}jobs/subscribe/{job.uuid}")
    assert every.json()["result"] == {"changes": 2}
    assert tapis_member.get(f"{TAPIS}jobs/subscribe/{job.uuid}").json()["result"] == []
    assert tapis_member.delete(f"{TAPIS}jobs/subscribe/{job.uuid}").json()["result"] == {
        "changes": 0
    }


def test_refusals_are_named_and_bounded(job, tapis_member, settings):
    settings.PORTAL_WEBHOOK_ALLOWED_HOSTS = ["hooks.example.org"]
    url = f"{TAPIS}jobs/subscribe/{job.uuid}"
    bad = tapis_member.post(
        url,
        {
            "eventCategoryFilter": "JOB_EVERYTHING",
            "deliveryTargets": [
                {"deliveryMethod": "WEBHOOK", "deliveryAddress": "https://internal.lan/x"},
                {"deliveryMethod": "EMAIL", "deliveryAddress": "not an address"},
            ],
            "ttlminutes": "soon",
            "colour": "red",
        },
        format="json",
    )
    assert bad.status_code == 400
    errors = bad.json()["result"]["errors"]
    paths = sorted(e.split(":")[0] for e in errors)
    assert paths == [
        "colour",
        "deliveryTargets[0].deliveryAddress",
        "deliveryTargets[1].deliveryAddress",
        "eventCategoryFilter",
        "ttlminutes",
    ], errors
    assert any("not in this site's webhook allow-list" in e for e in errors)
    empty = tapis_member.post(url, {"deliveryTargets": []}, format="json")
    assert empty.status_code == 400 and "deliveryTargets" in empty.json()["message"]
    not_object = tapis_member.post(url, [1], format="json")
    assert not_object.status_code == 400
    assert not JobSubscription.objects.exists()

    # At most 10 live subscriptions a job, 5 targets each.
    many = [("EMAIL", f"u{n}@example.org") for n in range(6)]
    assert _subscribe(tapis_member, job, *many).status_code == 400
    for n in range(10):
        assert _subscribe(tapis_member, job, ("EMAIL", f"u{n}@example.org")).status_code == 200
    full = _subscribe(tapis_member, job, ("EMAIL", "one.more@example.org"))
    assert full.status_code == 409 and "10 subscriptions already" in full.json()["message"]

    Job.objects.filter(pk=job.pk).update(status="FINISHED")
    JobSubscription.objects.all().delete()
    ended = _subscribe(tapis_member, job, ("EMAIL", "late@example.org"))
    assert ended.status_code == 409 and "has ended" in ended.json()["message"]
    assert (
        tapis_member.post(f"{TAPIS}jobs/subscribe/not-a-uuid", {}, format="json").status_code == 404
    )


def test_ttl_as_tapis_applies_it_and_expired_ones_are_gone(job, tapis_member):
    for ttl in (None, 0, 90, 10**6):
        extra = {} if ttl is None else {"ttlminutes": ttl}
        assert (
            _subscribe(tapis_member, job, ("EMAIL", "me@example.org"), **extra).status_code == 200
        )
    rows = list(JobSubscription.objects.order_by("id"))
    assert [r.ttl_minutes for r in rows] == [
        TTL_DEFAULT_MINUTES,
        TTL_DEFAULT_MINUTES,
        90,
        TTL_MAX_MINUTES,
    ]
    assert TTL_DEFAULT_MINUTES == 7 * 24 * 60 and TTL_MAX_MINUTES == 4 * TTL_DEFAULT_MINUTES
    assert rows[2].expires_at - rows[2].created == timedelta(minutes=90)
    JobSubscription.objects.filter(pk=rows[2].pk).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )
    listed = tapis_member.get(f"{TAPIS}jobs/subscribe/{job.uuid}").json()["result"]
    assert str(rows[2].uuid) not in [s["uuid"] for s in listed] and len(listed) == 3
    assert tapis_member.get(f"{TAPIS}jobs/subscribe/{rows[2].uuid}").status_code == 404


def test_a_submits_subscriptions_become_tapis_subscriptions(app, member, settings):
    settings.PORTAL_WEBHOOK_ALLOWED_HOSTS = ["hooks.example.org"]
    request = seed_request(
        subscriptions=[
            {
                "description": "tell me",
                "eventCategoryFilter": "JOB_NEW_STATUS",
                "ttlminutes": 60,
                "deliveryTargets": [
                    {"deliveryMethod": "WEBHOOK", "deliveryAddress": "https://hooks.example.org/x"}
                ],
            },
            {
                "eventCategoryFilter": "JOB_USER_EVENT",
                "deliveryTargets": [{"deliveryMethod": "EMAIL", "deliveryAddress": "a@b.org"}],
            },
        ]
    )
    job = tapis_job_submit(user=member, request=request)
    # Not the request's notifications (those speak the portal's states).
    assert "notifications" not in job.request
    rows = list(JobSubscription.objects.filter(job=job).order_by("id"))
    assert [(r.origin, r.type_filter, r.description, r.ttl_minutes) for r in rows] == [
        ("tapis", "jobs.JOB_NEW_STATUS.*", "tell me", 60),
        ("tapis", "jobs.JOB_USER_EVENT.*", "", TTL_DEFAULT_MINUTES),
    ]
    assert rows[0].targets == [
        {"deliveryMethod": "WEBHOOK", "deliveryAddress": "https://hooks.example.org/x"}
    ]
    # The job's JSON keeps the request's own subscriptions, as Tapis does.
    assert json.loads(job_to_tapis(job)["subscriptions"])[0]["description"] == "tell me"

    def refused(subscriptions) -> dict:
        with pytest.raises(SpecError) as caught:
            tapis_job_submit(user=member, request=seed_request(subscriptions=subscriptions))
        return {e.path: e.message for e in caught.value.errors}

    outside = {"deliveryMethod": "WEBHOOK", "deliveryAddress": "https://internal.lan/x"}
    assert list(refused([{"deliveryTargets": [outside]}])) == [
        "subscriptions[0].deliveryTargets[0].deliveryAddress"
    ]
    assert (
        "must be one of"
        in refused([{"eventCategoryFilter": "X", "deliveryTargets": []}])[
            "subscriptions[0].eventCategoryFilter"
        ]
    )
    eleven = [{"deliveryTargets": [{"deliveryMethod": "EMAIL", "deliveryAddress": "a@b.org"}]}]
    assert "at most 10" in refused(eleven * 11)["subscriptions"]
    assert Job.objects.count() == 1


# --- deliveries ---------------------------------------------------------------------------------


def test_deliveries_carry_tapis_event_types_and_statuses(
    job, tapis_member, receiver, inline, slave, member
):
    """A Tapis job's life as a subscriber sees it: JOB_NEW_STATUS with Tapis statuses through
    the stages, signed, each Tapis' Notification; the last one expires the subscriptions."""
    # The subscription change itself is published too (JOB_SUBSCRIPTION, after commit).
    assert (
        inline(lambda: _subscribe(tapis_member, job, ("WEBHOOK", receiver.url))).status_code == 200
    )

    # Each step commits on its own, as the launch and the watcher make them.
    steps = [
        lambda: job_transition(job=job, to="ASSIGNED", message="placed"),
        lambda: job_transition(job=job, to="STARTING", message="launching"),
        *[
            lambda stage=stage: job_stage_record(job=job, stage=stage)
            for stage in ("PROCESSING_INPUTS", "STAGING_INPUTS", "STAGING_JOB", "SUBMITTING_JOB")
        ],
        lambda: job_stage_record(job=job, stage=Stage.QUEUED, message="container started"),
        lambda: job_transition(job=job, to="RUNNING", message="running"),
        lambda: job_stage_record(job=job, stage=Stage.RUNNING),  # no change: RUNNING already
        lambda: job_stage_record(job=job, stage=Stage.ARCHIVING),
        lambda: job_transition(job=job, to="FINISHED", message="done", fields={"exit_code": 0}),
    ]
    for step in steps:
        assert inline(step)
    bodies = _notifications(receiver, job)
    assert [b["event"]["type"] for b in bodies] == [
        "jobs.JOB_SUBSCRIPTION.added",
        "jobs.JOB_NEW_STATUS.PROCESSING_INPUTS",
        "jobs.JOB_NEW_STATUS.STAGING_INPUTS",
        "jobs.JOB_NEW_STATUS.STAGING_JOB",
        "jobs.JOB_NEW_STATUS.SUBMITTING_JOB",
        "jobs.JOB_NEW_STATUS.QUEUED",
        "jobs.JOB_NEW_STATUS.RUNNING",
        "jobs.JOB_NEW_STATUS.ARCHIVING",
        "jobs.JOB_NEW_STATUS.FINISHED",
    ]
    statuses = [json.loads(b["event"]["data"]) for b in bodies[1:]]
    assert [(d["oldJobStatus"], d["newJobStatus"]) for d in statuses][:2] == [
        ("PENDING", "PROCESSING_INPUTS"),
        ("PROCESSING_INPUTS", "STAGING_INPUTS"),
    ]
    last = bodies[-1]
    data = json.loads(last["event"]["data"])
    assert (data["oldJobStatus"], data["newJobStatus"], data["jobUuid"]) == (
        "ARCHIVING",
        "FINISHED",
        str(job.uuid),
    )
    assert data["remoteResultInfo"] == "0" and data["remoteOutcome"] == "FINISHED"
    assert last["event"]["subject"] == str(job.uuid) and last["event"]["user"] == "alice"
    assert last["event"]["deleteSubscriptionsMatchingSubject"] is True
    assert not any(b["event"]["deleteSubscriptionsMatchingSubject"] for b in bodies[:-1])
    assert last["tenant"] == "portal" and last["deliveryTarget"]["deliveryAddress"] == receiver.url
    assert len({b["uuid"] for b in bodies}) == len(bodies)  # one notification each
    rows = list(JobDelivery.objects.filter(job=job).order_by("id"))
    assert [r.event for r in rows] == [b["event"]["type"] for b in bodies]
    assert all(r.ok and r.status_code == 200 and r.subscription_id for r in rows)
    # Tapis deletes a job's subscriptions with its last status: none are listed any more.
    assert tapis_member.get(f"{TAPIS}jobs/subscribe/{job.uuid}").json()["result"] == []
    # No portal state name was sent as a status.
    assert not any(d["newJobStatus"] in ("STARTING", "ASSIGNED") for d in statuses)


def test_the_first_status_and_a_failure_as_tapis_tells_them(
    app, member, receiver, inline, django_capture_on_commit_callbacks
):
    request = seed_request(
        subscriptions=[
            {
                "eventCategoryFilter": "ALL",
                "deliveryTargets": [{"deliveryMethod": "WEBHOOK", "deliveryAddress": receiver.url}],
            }
        ]
    )
    with django_capture_on_commit_callbacks(execute=True):  # tasks recorded, not run
        job = tapis_job_submit(user=member, request=request)
    assert len(inline(_replay_recorded)) == 2  # the submit's: PENDING and ADDED, as a worker
    inline(lambda: job_transition(job=job, to="FAILED", message="no slave fits"))
    bodies = _notifications(receiver, job)
    by_type = {b["event"]["type"]: json.loads(b["event"]["data"]) for b in bodies}
    # The submit's two in either order (the test replays them), then the failure's.
    assert {b["event"]["type"] for b in bodies[:2]} == {
        "jobs.JOB_NEW_STATUS.PENDING",
        "jobs.JOB_SUBSCRIPTION.ADDED",
    }
    assert [b["event"]["type"] for b in bodies[2:]] == [
        "jobs.JOB_ERROR_MESSAGE.FAILED",
        "jobs.JOB_NEW_STATUS.FAILED",
    ]
    first = by_type["jobs.JOB_NEW_STATUS.PENDING"]
    assert (first["oldJobStatus"], first["newJobStatus"]) == (None, "PENDING")
    error = by_type["jobs.JOB_ERROR_MESSAGE.FAILED"]
    assert error["jobStatus"] == "FAILED" and "no slave fits" in error["message"]
    assert by_type["jobs.JOB_SUBSCRIPTION.ADDED"]["numSubscriptions"] == 1


def test_send_event_reaches_job_user_event_subscribers_only(job, tapis_member, receiver, inline):
    _subscribe(tapis_member, job, ("WEBHOOK", receiver.url), category="JOB_USER_EVENT")
    _subscribe(tapis_member, job, ("WEBHOOK", receiver.url + "?status"), category="JOB_NEW_STATUS")
    tasks.recorded.clear()
    sent = inline(
        lambda: tapis_member.post(
            f"{TAPIS}jobs/{job.uuid}/sendEvent",
            {"eventData": "epoch 3 of 10", "eventDetail": "PROGRESS"},
            format="json",
        )
    )
    assert sent.status_code == 200, sent.content
    (only,) = _notifications(receiver, job)
    assert only["event"]["type"] == "jobs.JOB_USER_EVENT.PROGRESS"
    assert only["event"]["data"] == "epoch 3 of 10"
    assert only["deliveryTarget"]["deliveryAddress"] == receiver.url


def test_a_failing_receiver_is_retried_with_the_same_notice(
    job, tapis_member, receiver, settings, django_capture_on_commit_callbacks, inline
):
    receiver.status = 500
    _subscribe(tapis_member, job, ("WEBHOOK", receiver.url), category="JOB_USER_EVENT")
    tasks.recorded.clear()
    inline(
        lambda: tapis_member.post(
            f"{TAPIS}jobs/{job.uuid}/sendEvent", {"eventData": "one"}, format="json"
        )
    )
    assert [h["X-Portal-Delivery-Attempt"] for h, _ in receiver.requests] == ["1", "2", "3", "4"]
    bodies = _notifications(receiver, job)
    assert len({(b["uuid"], b["eventUuid"], b["event"]["data"]) for b in bodies}) == 1
    rows = list(JobDelivery.objects.filter(job=job).order_by("attempt"))
    assert [(r.attempt, r.error, r.retry_in_s) for r in rows] == [
        (1, "HTTP 500", 10),
        (2, "HTTP 500", 60),
        (3, "HTTP 500", 300),
        (4, "HTTP 500", None),
    ]

    # Queue mode: the failed attempt's row says when the next is due; the watcher's timer fires
    # the same notice then.
    receiver.requests.clear()
    tasks.recorded.clear()
    notice_row = JobSubscription.objects.get(type_filter="jobs.JOB_USER_EVENT.*")
    notice = {
        "uuid": "6f1c3e4a-0000-4000-8000-00000000abcd",
        "type": "jobs.JOB_USER_EVENT.DEFAULT",
        "time": "2026-01-01T00:00:00Z",
        "data": "two",
        "last": False,
    }
    with django_capture_on_commit_callbacks(execute=True):
        assert job_notice_publish(job=job, origin="tapis", notice=notice) == 1
    (args,) = [a for p, a in tasks.recorded if p == NOTICE_TASK]
    settings.PORTAL_TASK_MODE = "queue"
    failed = tasks.resolve(NOTICE_TASK)(*args) or JobDelivery.objects.get(delivery_id=args[2])
    settings.PORTAL_TASK_MODE = "record"
    assert failed.retry_at is not None and failed.notice == notice and failed.retry_in_s == 10
    tasks.recorded.clear()
    with django_capture_on_commit_callbacks(execute=True):
        assert deliveries_retry_due(now=failed.retry_at - timedelta(seconds=1)) == 0
        assert deliveries_retry_due(now=failed.retry_at) == 1
    (retry,) = [a for p, a in tasks.recorded if p == NOTICE_TASK]
    assert retry == (notice_row.pk, 0, args[2], 2, notice)
    # Unsubscribed meanwhile: the retry sends nothing and is no longer due.
    notice_row.delete()
    sent = len(receiver.requests)
    assert tasks.resolve(NOTICE_TASK)(*retry) is None
    assert len(receiver.requests) == sent
    assert not JobDelivery.objects.filter(retry_at__isnull=False).exists()


def test_one_event_told_twice_is_delivered_once(job, tapis_member, receiver, inline):
    _subscribe(tapis_member, job, ("WEBHOOK", receiver.url), category="JOB_NEW_STATUS")
    tasks.recorded.clear()
    inline(lambda: job_transition(job=job, to="CANCELLED", message="by alice"))
    assert len(receiver.requests) == 1
    # The same status change announced again (a signal sent twice): nothing more is sent.
    JobSubscription.objects.update(expires_at=None)
    inline(lambda: on_job_status_changed(Job, job=job, status="CANCELLED"))
    assert len(receiver.requests) == 1
    (only,) = _notifications(receiver, job)
    assert json.loads(only["event"]["data"])["newJobStatus"] == "CANCELLED"


def test_the_allow_list_is_checked_again_at_delivery(job, tapis_member, receiver, inline, settings):
    _subscribe(tapis_member, job, ("WEBHOOK", receiver.url), category="JOB_USER_EVENT")
    settings.PORTAL_WEBHOOK_ALLOWED_HOSTS = []
    tasks.recorded.clear()
    inline(
        lambda: tapis_member.post(
            f"{TAPIS}jobs/{job.uuid}/sendEvent", {"eventData": "x"}, format="json"
        )
    )
    assert receiver.requests == []
    (row,) = JobDelivery.objects.filter(job=job)
    assert not row.ok and row.error.startswith("refused") and row.retry_in_s is None


def test_type_filters_and_the_job_page_card(job, tapis_member, member):
    assert type_filter_matches("jobs.*.*", "jobs.JOB_USER_EVENT.PROGRESS")
    assert type_filter_matches("jobs.JOB_NEW_STATUS.*", "jobs.JOB_NEW_STATUS.FINISHED")
    assert not type_filter_matches("jobs.JOB_NEW_STATUS.*", "jobs.JOB_USER_EVENT.FINISHED")
    assert not type_filter_matches("jobs.*", "jobs.JOB_NEW_STATUS.FINISHED")
    _subscribe(tapis_member, job, ("EMAIL", "me@example.org"), category="JOB_NEW_STATUS")
    section = job_deliveries_section(job, member, True)
    assert section is not None
    assert section["subscriptions"][-1]["eventTypes"] == ["jobs.JOB_NEW_STATUS.*"]
    assert section["webhook_secret"]  # how a Tapis subscriber checks the signatures
