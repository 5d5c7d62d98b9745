"""Subscriptions of a job (``request.notifications.subscriptions``, checked at submit by
jobs/spec/v2_notifications.py): on each matching status change, deliver to e-mail or to a signed
webhook, with retries.

- Fired with GPULab's e-mails (``notifications.job_emails.job_notify_request`` calls
  ``subscriptions_request``) when jobs announces a status (``jobs.signals.job_status_changed``):
  one background task per target, after commit.
- A webhook gets a JSON body and ``X-Portal-Signature-256: sha256=<hex>``, the HMAC-SHA256 of
  the exact body under the job's webhook secret (``job_webhook_secret``: shown to the job's
  project on its page and over the API; never written to logs, events or deliveries).
  Redirects are not followed (they could lead anywhere).
- The site's allow-list (PORTAL_WEBHOOK_ALLOWED_HOSTS) is checked at submit and again at each
  delivery, after resolving the host: a name that resolves to a private, loopback or
  link-local address is refused unless that host is listed by itself. The request then goes to
  the very address that was checked (TLS still verifies the host name), so a name that
  resolves differently a moment later (DNS rebinding) cannot lead it elsewhere.
- A failed attempt (connection error, timeout, non-2xx answer, mail error) is retried after
  each of PORTAL_WEBHOOK_RETRY_DELAYS_S (10 s, 60 s, 300 s); an allow-list refusal is final.
  The failed attempt's row keeps when the next is due (``retry_at``); the watcher's timer
  (``deliveries_retry_loop``, started in the watcher process on ``jobs.signals.watcher_started``)
  claims each due row by compare-and-swap and fires the next attempt, within a second of its
  time. (Not django-q2 schedules: its scheduler looks only every 30 s, and one unreadable
  schedule rolls back every schedule of the site.) Every attempt is a ``JobDelivery`` row
  (status code, error, attempt, time, when the next one follows), visible to whoever reads the
  job in full.

Subscriptions that apps above make apart from the request (``JobSubscription`` rows: Tapis'
``/jobs/subscribe``) are published by notifications/notices.py and go through the same sending,
signature, allow-list and retries (``delivery_attempt``, ``delivery_record``).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import socket
import uuid
from collections.abc import Callable
from datetime import timedelta
from urllib.parse import urlsplit

import certifi
import urllib3
from django.conf import settings
from django.core.mail import send_mail
from django.utils import timezone

from accounts.permissions import may_view_all_jobs
from core import tasks
from core.connections import connections_release
from core.errors import NotAllowed
from core.timefmt import utc_z
from jobs.models import Job
from jobs.selectors import job_sees_full, project_ids_of
from jobs.spec.v2_notifications import (
    ALL,
    host_port,
    is_private_address,
    listed_exactly,
    webhook_refusal,
)
from notifications import task_names
from notifications.models import JobDelivery

log = logging.getLogger(__name__)
DELIVER_TASK = task_names.JOB_DELIVER
NOTICE_DELIVER_TASK = task_names.JOB_NOTICE_DELIVER
SIGNATURE_HEADER = "X-Portal-Signature-256"
USER_AGENT = "gpu-portal-webhook/1"


class Refused(Exception):
    """A delivery the site's rules forbid: recorded, never retried."""


def job_webhook_secret(job: Job) -> str:
    """The key of the job's webhook signatures: derived from the site's secret key and the
    job's uuid, so nothing extra is stored and no two jobs share one."""
    key = settings.SECRET_KEY.encode()
    return hmac.new(key, b"gpuportal-webhook-v1:" + str(job.uuid).encode(), "sha256").hexdigest()


def signature(secret: str, body: bytes) -> str:
    """The header value a receiver recomputes: ``sha256=`` + HMAC-SHA256(secret, body)."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def _subscriptions(job: Job) -> list[dict]:
    if "request" in job.get_deferred_fields():
        return []
    return ((job.request or {}).get("notifications") or {}).get("subscriptions") or []


def subscriptions_request(*, job: Job, event: str) -> int:
    """Fire one delivery task per target of each enabled subscription matching ``event``;
    returns how many were fired."""
    fired = 0
    for s_index, subscription in enumerate(_subscriptions(job)):
        if not subscription.get("enabled", True):
            continue
        types = subscription.get("eventTypes") or []
        if event not in types and ALL not in types:
            continue
        for t_index, _target in enumerate(subscription.get("deliveryTargets") or []):
            tasks.fire(DELIVER_TASK, job.pk, event, s_index, t_index, str(uuid.uuid4()), 1)
            fired += 1
    return fired


def _body(job: Job, event: str, delivery_id: str) -> bytes:
    url = ""
    if settings.PORTAL_BASE_URL:
        url = f"{settings.PORTAL_BASE_URL.rstrip('/')}/jobs/{job.uuid}/"
    document = {
        "id": delivery_id,
        "event": event,
        "time": (job.event_times or {}).get(event) or utc_z(job.status_updated),
        "job": {
            "uuid": str(job.uuid),
            "name": job.name,
            "status": job.status,
            "project": job.project.name,
            "owner": job.owner.username,
            "exitCode": job.exit_code,
            "endReason": job.end_reason or None,
            "url": url,
        },
    }
    return json.dumps(document, separators=(",", ":"), sort_keys=True).encode()


def _check_resolved(url: str) -> str:
    """The allow-list again, now with the addresses the name resolves to; returns the address
    to connect to."""
    allowed = settings.PORTAL_WEBHOOK_ALLOWED_HOSTS
    why = webhook_refusal(url, allowed)
    if why is not None:
        raise Refused(f"refused: {why}")
    found = host_port(url)
    assert found is not None  # webhook_refusal refuses anything but an http(s) URL
    host, port = found
    try:
        infos = socket.getaddrinfo(host.strip("[]"), port, proto=socket.IPPROTO_TCP)
    except OSError as error:
        raise ConnectionError(f"cannot resolve {host}: {error}") from None
    addresses = [str(info[4][0]) for info in infos]
    if not listed_exactly(host, port, allowed):
        for address in addresses:
            if is_private_address(address):
                raise Refused(
                    f"refused: {host} resolves to the private address {address}; allowed only "
                    "when the host is listed by itself in PORTAL_WEBHOOK_ALLOWED_HOSTS"
                )
    # IPv4 first: what most receivers listen on.
    return sorted(addresses, key=lambda a: ":" in a)[0]


def _post(job: Job, url: str, event: str, delivery_id: str, attempt: int, body: bytes) -> int:
    address = _check_resolved(url)
    parts = urlsplit(url)
    found = host_port(url)
    assert found is not None  # _check_resolved passed
    host, port = found
    timeout = urllib3.Timeout(total=settings.PORTAL_WEBHOOK_TIMEOUT_S)
    pool: urllib3.HTTPConnectionPool
    if parts.scheme == "https":
        pool = urllib3.HTTPSConnectionPool(
            address,
            port,
            timeout=timeout,
            retries=False,
            cert_reqs="CERT_REQUIRED",
            ca_certs=certifi.where(),
            server_hostname=host,
            assert_hostname=host,
        )
    else:
        pool = urllib3.HTTPConnectionPool(address, port, timeout=timeout, retries=False)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    try:
        response = pool.urlopen(
            "POST",
            target,
            body=body,
            headers={
                "Host": parts.netloc.rpartition("@")[2],
                "Content-Type": "application/json",
                "User-Agent": USER_AGENT,
                "X-Portal-Event": event,
                "X-Portal-Delivery": delivery_id,
                "X-Portal-Delivery-Attempt": str(attempt),
                SIGNATURE_HEADER: signature(job_webhook_secret(job), body),
            },
            redirect=False,
            retries=False,
            preload_content=False,
        )
        response.drain_conn()
        return response.status
    finally:
        pool.close()


def _mail_text(job: Job, event: str) -> tuple[str, str]:
    lines = [f"Job {job.name} ({job.uuid}) of project {job.project.name} is {event}."]
    if job.end_reason:
        lines.append(f"Reason: {job.end_reason}")
    if settings.PORTAL_BASE_URL:
        lines.append(f"{settings.PORTAL_BASE_URL.rstrip('/')}/jobs/{job.uuid}/")
    return f"[GPU Portal] {job.name} is {event}", "\n".join(lines) + "\n"


def delivery_attempt(
    *,
    job: Job,
    method: str,
    address: str,
    event: str,
    delivery_id: str,
    attempt: int,
    body: bytes,
    mail: tuple[str, str],
) -> tuple[int | None, str, bool]:
    """Send one attempt: ``body`` to a webhook (signed), or the e-mail ``mail`` (subject,
    text). Returns (HTTP status, error or "", whether the error is final: never retried)."""
    status_code, error, final = None, "", False
    try:
        if method == JobDelivery.Method.WEBHOOK:
            status_code = _post(job, address, event, delivery_id, attempt, body)
            if not 200 <= status_code < 300:
                error = f"HTTP {status_code}"
        else:
            send_mail(
                subject=mail[0],
                message=mail[1],
                from_email=None,
                recipient_list=[address],
                fail_silently=False,
            )
    except Refused as refused:
        error, final = str(refused), True
    except Exception as failure:  # network, TLS, timeout, mail server: retried
        error = f"{type(failure).__name__}: {failure}"
    return status_code, error, final


def delivery_record(
    *,
    job: Job,
    delivery_id: str,
    attempt: int,
    event: str,
    method: str,
    address: str,
    outcome: tuple[int | None, str, bool],
    fire_next: Callable[[int], None],
    s_index: int = 0,
    t_index: int = 0,
    subscription_id: int | None = None,
    notice: dict | None = None,
) -> JobDelivery:
    """Record one attempt and schedule the next when it failed and may be retried: a row due
    at ``retry_at`` for the watcher's timer (queue mode), or ``fire_next(next attempt)`` at
    once (inline mode: development, tests)."""
    status_code, error, final = outcome
    delays = settings.PORTAL_WEBHOOK_RETRY_DELAYS_S
    retry_in = None
    if error and not final and attempt <= len(delays):
        retry_in = int(delays[attempt - 1])
    now = timezone.now()
    queued_retry = retry_in is not None and settings.PORTAL_TASK_MODE == "queue"
    delivery = JobDelivery.objects.create(
        job=job,
        delivery_id=delivery_id,
        event=str(event)[:128],
        method=method,
        address=address[:2000],
        attempt=attempt,
        time=now,
        ok=not error,
        status_code=status_code,
        error=error[:1000],
        retry_in_s=retry_in,
        retry_at=(
            now + timedelta(seconds=retry_in) if queued_retry and retry_in is not None else None
        ),
        subscription_index=s_index,
        target_index=t_index,
        subscription_id=subscription_id,
        notice=notice,
    )
    if error:
        log.info(
            "delivery %s of job %s attempt %d failed: %s", delivery_id, job.uuid, attempt, error
        )
    delivery_retry_done(delivery_id, attempt)
    if retry_in is not None and not queued_retry:
        fire_next(attempt + 1)
    return delivery


def subscription_deliver(
    *, job_id: int, event: str, s_index: int, t_index: int, delivery_id: str, attempt: int
) -> JobDelivery | None:
    """One attempt of one delivery; schedules the next attempt when this one failed.

    An attempt already recorded is not sent again (a task delivered twice by the queue, or a
    retry claimed again after its sender died: see ``deliveries_retry_due``)."""
    job = Job.objects.select_related("project", "owner").filter(pk=job_id).first()
    if job is None:
        return None
    if JobDelivery.objects.filter(delivery_id=delivery_id, attempt=attempt).exists():
        delivery_retry_done(delivery_id, attempt)
        return None
    try:
        target = _subscriptions(job)[s_index]["deliveryTargets"][t_index]
    except (IndexError, KeyError, TypeError):
        return None
    method, address = target["deliveryMethod"], target["deliveryAddress"]
    outcome = delivery_attempt(
        job=job,
        method=method,
        address=address,
        event=event,
        delivery_id=delivery_id,
        attempt=attempt,
        body=_body(job, event, delivery_id),
        mail=_mail_text(job, event),
    )
    return delivery_record(
        job=job,
        delivery_id=delivery_id,
        attempt=attempt,
        event=event,
        method=method,
        address=address,
        outcome=outcome,
        fire_next=lambda next_attempt: tasks.fire(
            DELIVER_TASK, job_id, str(event), s_index, t_index, delivery_id, next_attempt
        ),
        s_index=s_index,
        t_index=t_index,
    )


def delivery_retry_done(delivery_id: str, attempt: int) -> None:
    """Attempt ``attempt`` is recorded: the retry that led to it is no longer due."""
    JobDelivery.objects.filter(
        delivery_id=delivery_id, attempt__lt=attempt, retry_at__isnull=False
    ).update(retry_at=None)


# A claimed retry comes due again after this long unless its attempt was recorded meanwhile: a
# worker killed while sending it (or a queue that lost the task) delays it, never drops it.
RETRY_CLAIM_S = 120


def deliveries_retry_due(*, now=None, limit: int = 100) -> int:
    """Fire the next attempt of every failed delivery whose retry is due; returns how many.

    Each row is claimed by moving its ``retry_at`` on by RETRY_CLAIM_S where it is still the
    time that was read (compare-and-swap), so two timers never fire one retry at once; the
    attempt, once recorded, clears it (``delivery_retry_done``)."""
    now = now or timezone.now()
    due = JobDelivery.objects.filter(retry_at__lte=now).order_by("retry_at")[:limit]
    fired = 0
    for row in due.values(
        "pk",
        "job_id",
        "event",
        "subscription_index",
        "target_index",
        "delivery_id",
        "attempt",
        "retry_at",
        "notice",
        "subscription_id",
    ):
        claimed = JobDelivery.objects.filter(pk=row["pk"], retry_at=row["retry_at"]).update(
            retry_at=now + timedelta(seconds=RETRY_CLAIM_S)
        )
        if not claimed:
            continue  # another timer claimed it
        if row["notice"] is not None:
            # A JobSubscription row's delivery (notifications/notices.py): the same notice
            # again. A row deleted meanwhile is found gone by the task, which ends it there.
            tasks.fire(
                NOTICE_DELIVER_TASK,
                row["subscription_id"],
                row["target_index"],
                str(row["delivery_id"]),
                row["attempt"] + 1,
                row["notice"],
            )
        else:
            tasks.fire(
                DELIVER_TASK,
                row["job_id"],
                row["event"],
                row["subscription_index"],
                row["target_index"],
                str(row["delivery_id"]),
                row["attempt"] + 1,
            )
        fired += 1
    return fired


RETRY_POLL_S = 1.0


def deliveries_retry_loop(stop) -> None:
    """The watcher's delivery timer: until ``stop`` is set, send each retry when it is due."""
    while not stop.is_set():
        try:
            deliveries_retry_due()
        except Exception:  # the database may be briefly unreachable: try again shortly
            log.exception("delivery retry timer")
        finally:
            connections_release()  # give the connection back while this thread sleeps
        stop.wait(RETRY_POLL_S)


# --- reading -------------------------------------------------------------------------------


def job_deliveries_list(*, job: Job, user, limit: int = 200) -> list[JobDelivery]:
    """The job's delivery attempts, newest last, for whoever reads the job in full."""
    if not job_sees_full(user, job):
        raise NotAllowed("only the job's project and the people it is shared with see this")
    rows = JobDelivery.objects.filter(job=job).order_by("-time", "-id")[:limit]
    return list(rows)[::-1]


def job_webhook_secret_for(*, job: Job, user) -> str | None:
    """The webhook secret for the job's project (and admins); None for anyone else (people the
    job is shared with read the job, not its keys)."""
    if job.project_id in project_ids_of(user) or may_view_all_jobs(user):
        return job_webhook_secret(job)
    return None


def delivery_as_json(delivery: JobDelivery) -> dict:
    return {
        "deliveryId": str(delivery.delivery_id),
        "event": delivery.event,
        "method": delivery.method,
        "address": delivery.address,
        "attempt": delivery.attempt,
        "time": utc_z(delivery.time),
        "ok": delivery.ok,
        "statusCode": delivery.status_code,
        "error": delivery.error or None,
        "retryInSeconds": delivery.retry_in_s,
    }
