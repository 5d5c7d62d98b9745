"""Subscriptions: the request section (validated with field paths, the webhook allow-list at
submit), signed deliveries to a local HTTP receiver in a thread, retries with backoff on a
failing receiver, the allow-list again at delivery (after DNS resolution), e-mail targets, and
who sees the deliveries and the webhook secret."""

import copy
import hashlib
import hmac
import json
import logging
import threading
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.core import mail
from django.utils import timezone
from rest_framework.test import APIClient

from core import tasks
from jobs.models import Job, JobEvent
from jobs.spec import SpecDefaults, SpecError
from jobs.spec.v2 import normalize_job
from jobs.spec.v2_notifications import EVENT_TYPES, webhook_refusal
from jobs.states import JobStatus
from jobs.transitions import job_transition
from jobs.user_actions.services import job_submit
from jobs.user_actions.shares import job_share_create
from notifications.models import JobDelivery
from notifications.subscriptions import (
    SIGNATURE_HEADER,
    job_webhook_secret,
    subscription_deliver,
)
from tests.conftest import HELLO_WORLD

pytestmark = pytest.mark.django_db
PORTAL = "/api/portal/"
DELIVERY = "6f1c3e4a-0000-4000-8000-000000000001"


class Receiver:
    """A local HTTP server in a thread that records every request and answers ``status``."""

    def __init__(self, status=200):
        self.status = status
        self.requests = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                receiver.requests.append((dict(self.headers), body))
                self.send_response(receiver.status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver(settings):
    server = Receiver()
    settings.PORTAL_WEBHOOK_ALLOWED_HOSTS = [f"127.0.0.1:{server.port}"]
    yield server
    server.close()


def document(*targets, events=("RUNNING", "FINISHED")) -> dict:
    doc = copy.deepcopy(HELLO_WORLD)
    doc["request"]["notifications"] = {
        "subscriptions": [
            {
                "eventTypes": list(events),
                "deliveryTargets": [
                    {"deliveryMethod": method, "deliveryAddress": address}
                    for method, address in targets
                ],
            }
        ]
    }
    return doc


def verify(job, headers, body) -> dict:
    """What a receiver does: recompute the signature with the job's secret, then parse."""
    secret = job_webhook_secret(job).encode()
    expected = "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()
    assert hmac.compare_digest(headers[SIGNATURE_HEADER], expected)
    return json.loads(body)


def run_through(job, *states):
    for state in states:
        assert job_transition(job=job, to=state, message=f"to {state}")


# --- the request section -----------------------------------------------------------------------


def test_the_section_is_normalised_and_absent_when_not_given():
    defaults = SpecDefaults(webhook_allowed_hosts=("hooks.example.org",))
    plain = normalize_job(copy.deepcopy(HELLO_WORLD), defaults=defaults)
    assert "notifications" not in plain["request"]
    doc = document(
        ("webhook", "https://hooks.example.org/x"), ("EMAIL", "me@example.org"), events=["running"]
    )
    request = normalize_job(doc, defaults=defaults)["request"]
    assert request["notifications"] == {
        "subscriptions": [
            {
                "description": "",
                "enabled": True,
                "eventTypes": ["RUNNING"],
                "deliveryTargets": [
                    {"deliveryMethod": "WEBHOOK", "deliveryAddress": "https://hooks.example.org/x"},
                    {"deliveryMethod": "EMAIL", "deliveryAddress": "me@example.org"},
                ],
            }
        ]
    }
    again = normalize_job({"name": "x", "request": request}, defaults=defaults)
    assert again["request"]["notifications"] == request["notifications"]


def test_every_problem_is_named_by_its_field_path():
    doc = copy.deepcopy(HELLO_WORLD)
    doc["request"]["notifications"] = {
        "subscriptions": [
            {
                "eventTypes": ["RUNNING", "EXPLODED"],
                "deliveryTargets": [
                    {"deliveryMethod": "WEBHOOK", "deliveryAddress": "http://evil.example.com/"},
                    {"deliveryMethod": "PIGEON", "deliveryAddress": "x"},
                    {"deliveryMethod": "EMAIL", "deliveryAddress": "not an address"},
                    {"deliveryMethod": "WEBHOOK", "deliveryAddress": "ftp://hooks.example.org/"},
                    {"deliveryMethod": "WEBHOOK", "deliveryAddress": "http://10.0.0.5/"},
                ],
            },
            {"eventTypes": [], "deliveryTargets": [], "colour": 1},
        ]
    }
    with pytest.raises(SpecError) as refused:
        normalize_job(doc, defaults=SpecDefaults(webhook_allowed_hosts=("*",)))
    path = "request.notifications.subscriptions"
    messages = {e.path: e.message for e in refused.value.errors}
    assert messages[f"{path}[0].eventTypes[1]"].startswith("must be ALL or one of")
    assert messages[f"{path}[0].deliveryTargets[1].deliveryMethod"] == "must be EMAIL or WEBHOOK"
    assert messages[f"{path}[0].deliveryTargets[2].deliveryAddress"] == "must be an e-mail address"
    assert "http:// or https://" in messages[f"{path}[0].deliveryTargets[3].deliveryAddress"]
    assert "private" in messages[f"{path}[0].deliveryTargets[4].deliveryAddress"]
    assert f"{path}[0].deliveryTargets[0].deliveryAddress" not in messages  # "*" allows it
    assert messages[f"{path}[1].eventTypes"].startswith("must be a non-empty list")
    assert messages[f"{path}[1].deliveryTargets"].startswith("must be a non-empty list")
    assert f"{path}[1].colour" in messages


def test_the_allow_list_rules():
    allowed = ["hooks.example.org", "*.corp.example", "127.0.0.1:9000"]
    assert webhook_refusal("https://hooks.example.org/a", allowed) is None
    assert webhook_refusal("https://a.corp.example/a", allowed) is None
    assert webhook_refusal("http://127.0.0.1:9000/", allowed) is None
    assert "allow-list" in webhook_refusal("https://other.example.org/", allowed)
    assert "private" in webhook_refusal("http://127.0.0.1:9001/", allowed)
    assert "private" in webhook_refusal("http://[::1]/", ["*"])
    assert "private" in webhook_refusal("http://169.254.169.254/latest", ["*"])
    assert webhook_refusal("https://hooks.example.org/", []) is not None


def test_event_types_are_the_portals_states():
    assert set(EVENT_TYPES) == {s.value for s in JobStatus} - {"ASSIGNED"}


def test_a_webhook_outside_the_allow_list_is_refused_at_submit_and_nothing_is_written(
    member, project, slave, settings
):
    settings.PORTAL_WEBHOOK_ALLOWED_HOSTS = ["hooks.example.org"]
    with pytest.raises(SpecError) as refused:
        job_submit(
            user=member,
            project=project,
            document=document(("WEBHOOK", "http://internal.example.net/hook")),
        )
    (error,) = refused.value.errors
    assert error.path == (
        "request.notifications.subscriptions[0].deliveryTargets[0].deliveryAddress"
    )
    assert "PORTAL_WEBHOOK_ALLOWED_HOSTS" in error.message
    assert Job.objects.count() == 0


def test_the_api_answers_400_with_the_field_path(member, slave, settings):
    client = APIClient()
    client.force_authenticate(member)
    answer = client.post(
        "/api/gpulab/v4.0/jobs",
        data=json.dumps(document(("WEBHOOK", "http://10.1.2.3/"))),
        content_type="application/json",
    )
    assert answer.status_code == 400
    (line,) = answer.json()["errors"]
    assert line.startswith(
        "request.notifications.subscriptions[0].deliveryTargets[0].deliveryAddress: "
    )


# --- deliveries ---------------------------------------------------------------------------------


@pytest.fixture
def inline(settings, django_capture_on_commit_callbacks):
    """Run ``action`` with tasks run inline after its commit (deliveries and their retries),
    as a worker would; submissions outside it only record their tasks (no scheduler runs)."""
    settings.PORTAL_WEBHOOK_RETRY_DELAYS_S = [10, 60, 300]

    def run(action):
        settings.PORTAL_TASK_MODE = "inline"
        try:
            with django_capture_on_commit_callbacks(execute=True):
                return action()
        finally:
            settings.PORTAL_TASK_MODE = "record"

    return run


def test_signed_deliveries_for_running_and_finished(submit, receiver, inline, slave, caplog):
    caplog.set_level(logging.DEBUG)
    job = submit(document(("WEBHOOK", receiver.url)))
    assert receiver.requests == []  # QUEUED is not subscribed
    inline(lambda: run_through(job, "ASSIGNED", "STARTING", "RUNNING", "FINISHED"))
    bodies = [verify(job, headers, body) for headers, body in receiver.requests]
    assert [b["event"] for b in bodies] == ["RUNNING", "FINISHED"]
    assert bodies[1]["job"]["uuid"] == str(job.uuid) and bodies[1]["job"]["status"] == "FINISHED"
    assert [h["X-Portal-Event"] for h, _ in receiver.requests] == ["RUNNING", "FINISHED"]
    rows = list(JobDelivery.objects.filter(job=job).order_by("id"))
    assert [(r.event, r.ok, r.status_code, r.attempt, r.retry_in_s) for r in rows] == [
        ("RUNNING", True, 200, 1, None),
        ("FINISHED", True, 200, 1, None),
    ]
    secret = job_webhook_secret(job)
    assert secret not in caplog.text
    assert not JobEvent.objects.filter(message__contains=secret).exists()
    assert not JobDelivery.objects.filter(error__contains=secret).exists()


def test_a_failing_receiver_is_retried_with_backoff(submit, receiver, inline, slave):
    receiver.status = 500
    job = submit(document(("WEBHOOK", receiver.url), events=["RUNNING"]))
    inline(lambda: run_through(job, "ASSIGNED", "STARTING", "RUNNING"))
    assert [h["X-Portal-Delivery-Attempt"] for h, _ in receiver.requests] == ["1", "2", "3", "4"]
    assert len({h["X-Portal-Delivery"] for h, _ in receiver.requests}) == 1  # one delivery
    for headers, body in receiver.requests:
        verify(job, headers, body)
    rows = list(JobDelivery.objects.filter(job=job).order_by("attempt"))
    assert [(r.attempt, r.status_code, r.error, r.retry_in_s) for r in rows] == [
        (1, 500, "HTTP 500", 10),
        (2, 500, "HTTP 500", 60),
        (3, 500, "HTTP 500", 300),
        (4, 500, "HTTP 500", None),
    ]


def test_a_retry_is_due_after_the_delay_and_sent_once(
    submit, receiver, settings, django_capture_on_commit_callbacks
):
    """Queue mode: the failed attempt's row says when the next is due; the timer fires it
    then, once, as plain arguments (no django-q2 schedule: those are read every 30 s only)."""
    from django_q.models import Schedule

    from notifications.subscriptions import RETRY_CLAIM_S, deliveries_retry_due

    receiver.status = 503
    settings.PORTAL_TASK_MODE = "queue"
    settings.PORTAL_WEBHOOK_RETRY_DELAYS_S = [10, 60, 300]
    job = submit(document(("WEBHOOK", receiver.url), events=["QUEUED"]))
    before = timezone.now()
    delivery = subscription_deliver(
        job_id=job.pk, event="QUEUED", s_index=0, t_index=0, delivery_id=DELIVERY, attempt=2
    )
    assert delivery.retry_in_s == 60 and not delivery.ok
    assert not Schedule.objects.filter(func__endswith=".job_deliver").exists()
    wait = delivery.retry_at - before
    assert timedelta(seconds=59) < wait < timedelta(seconds=62)
    settings.PORTAL_TASK_MODE = "record"
    with django_capture_on_commit_callbacks(execute=True):
        assert deliveries_retry_due(now=delivery.retry_at - timedelta(seconds=1)) == 0
        assert deliveries_retry_due(now=delivery.retry_at) == 1
        assert deliveries_retry_due(now=delivery.retry_at + timedelta(seconds=5)) == 0  # claimed
    (fired,) = [args for path, args in tasks.recorded if path == "notifications.tasks.job_deliver"]
    assert fired == (job.pk, "QUEUED", 0, 0, DELIVERY, 3)
    assert all(type(value) in (int, str) for value in fired)  # plain values, no enum

    # Its sender died (or the queue lost the task): the claim runs out and it is fired again.
    lost = delivery.retry_at + timedelta(seconds=RETRY_CLAIM_S + 1)
    with django_capture_on_commit_callbacks(execute=True):
        assert deliveries_retry_due(now=lost) == 1
    # Attempt 3 is recorded (the receiver answers now): nothing is due any more, and the same
    # attempt delivered twice by the queue is not sent again.
    receiver.status = 200
    third = subscription_deliver(
        job_id=job.pk, event="QUEUED", s_index=0, t_index=0, delivery_id=DELIVERY, attempt=3
    )
    assert third.ok
    assert not JobDelivery.objects.filter(retry_at__isnull=False).exists()
    sent = len(receiver.requests)
    again = subscription_deliver(
        job_id=job.pk, event="QUEUED", s_index=0, t_index=0, delivery_id=DELIVERY, attempt=3
    )
    assert again is None and len(receiver.requests) == sent
    assert deliveries_retry_due(now=lost + timedelta(days=1)) == 0


def test_an_unreachable_receiver_is_retried_too(submit, inline, settings, slave):
    settings.PORTAL_WEBHOOK_ALLOWED_HOSTS = ["127.0.0.1:9"]  # discard port: nobody listens
    settings.PORTAL_WEBHOOK_TIMEOUT_S = 2
    job = submit(document(("WEBHOOK", "http://127.0.0.1:9/"), events=["RUNNING"]))
    inline(lambda: run_through(job, "ASSIGNED", "STARTING", "RUNNING"))
    rows = list(JobDelivery.objects.filter(job=job).order_by("attempt"))
    assert [r.attempt for r in rows] == [1, 2, 3, 4]
    assert all(not r.ok and r.status_code is None and "refused" in r.error.lower() for r in rows)


def test_a_name_resolving_to_a_private_address_is_refused_at_delivery(
    submit, receiver, inline, settings, slave
):
    settings.PORTAL_WEBHOOK_ALLOWED_HOSTS = ["*"]
    url = f"http://localhost:{receiver.port}/hook"  # allowed by "*" at submit: a public name
    job = submit(document(("WEBHOOK", url), events=["RUNNING"]))
    inline(lambda: run_through(job, "ASSIGNED", "STARTING", "RUNNING"))
    assert receiver.requests == []
    (row,) = JobDelivery.objects.filter(job=job)
    assert "resolves to the private address 127.0.0.1" in row.error
    assert row.retry_in_s is None  # a refusal is final
    settings.PORTAL_WEBHOOK_ALLOWED_HOSTS = ["*", f"localhost:{receiver.port}"]
    subscription_deliver(
        job_id=job.pk, event="RUNNING", s_index=0, t_index=0, delivery_id=DELIVERY, attempt=1
    )
    assert len(receiver.requests) == 1  # listed by itself: allowed


def test_the_allow_list_is_checked_again_at_delivery(submit, receiver, inline, settings, slave):
    job = submit(document(("WEBHOOK", receiver.url), events=["RUNNING"]))
    settings.PORTAL_WEBHOOK_ALLOWED_HOSTS = ["hooks.example.org"]  # the site changed its list
    inline(lambda: run_through(job, "ASSIGNED", "STARTING", "RUNNING"))
    assert receiver.requests == []
    (row,) = JobDelivery.objects.filter(job=job)
    assert row.error.startswith("refused: ") and row.retry_in_s is None


def test_email_targets_use_the_mail_path(submit, inline, slave):
    job = submit(document(("EMAIL", "watcher@example.org"), events=["RUNNING"]))
    inline(lambda: run_through(job, "ASSIGNED", "STARTING", "RUNNING"))
    (message,) = mail.outbox
    assert message.to == ["watcher@example.org"] and "is RUNNING" in message.subject
    (row,) = JobDelivery.objects.filter(job=job)
    assert (row.method, row.ok, row.error) == ("EMAIL", True, "")


def test_disabled_subscriptions_and_other_events_deliver_nothing(submit, receiver, inline, slave):
    doc = document(("WEBHOOK", receiver.url), events=["FAILED"])
    job = submit(doc)
    inline(lambda: run_through(job, "ASSIGNED", "STARTING", "RUNNING", "FINISHED"))
    doc["request"]["notifications"]["subscriptions"][0].update(enabled=False, eventTypes=["ALL"])
    other = submit(doc)
    inline(lambda: run_through(other, "ASSIGNED", "STARTING", "RUNNING"))
    assert receiver.requests == [] and not JobDelivery.objects.exists()


def test_deliveries_and_the_secret_over_the_api_and_the_page(
    submit, receiver, inline, member, outsider, make_user, slave
):
    job = submit(document(("WEBHOOK", receiver.url), events=["RUNNING"]))
    inline(lambda: run_through(job, "ASSIGNED", "STARTING", "RUNNING"))
    client = APIClient()
    client.force_authenticate(member)
    url = PORTAL + f"jobs/{job.uuid}/subscriptions/"
    body = client.get(url).json()
    assert body["webhookSecret"] == job_webhook_secret(job)
    assert body["signatureHeader"] == SIGNATURE_HEADER
    (delivery,) = body["deliveries"]
    assert (delivery["event"], delivery["ok"], delivery["statusCode"]) == ("RUNNING", True, 200)
    client.force_authenticate(outsider)
    assert client.get(url).status_code == 403
    job_share_create(job=job, user=member, grantee_user=outsider)
    shared = client.get(url).json()
    assert shared["webhookSecret"] is None and len(shared["deliveries"]) == 1
    page = APIClient()
    page.force_login(member)
    html = page.get(f"/jobs/{job.uuid}/").content.decode()
    assert 'id="deliveries-table"' in html and job_webhook_secret(job) in html
    page.force_login(outsider)
    html = page.get(f"/jobs/{job.uuid}/").content.decode()
    assert 'id="deliveries-table"' in html and job_webhook_secret(job) not in html


def test_the_request_goes_to_the_address_that_was_checked(
    submit, receiver, inline, settings, slave, monkeypatch
):
    """One name lookup, checked, then connected to: a second lookup (DNS rebinding) never
    happens. The name below exists only in this patched resolver."""
    import socket

    host = "hooks.portal-test.invalid"
    settings.PORTAL_WEBHOOK_ALLOWED_HOSTS = [f"{host}:{receiver.port}"]
    lookups = []
    real = socket.getaddrinfo

    def resolve(name, *args, **kwargs):
        if name == host:
            lookups.append(name)
            return real("127.0.0.1", *args, **kwargs)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    url = f"http://{host}:{receiver.port}/hook?x=1"
    job = submit(document(("WEBHOOK", url), events=["RUNNING"]))
    inline(lambda: run_through(job, "ASSIGNED", "STARTING", "RUNNING"))
    (row,) = JobDelivery.objects.filter(job=job)
    assert row.ok, row.error
    assert lookups == [host]
    ((headers, body),) = receiver.requests
    assert headers["Host"] == f"{host}:{receiver.port}"
    verify(job, headers, body)
