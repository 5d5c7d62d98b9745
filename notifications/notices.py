"""Notices: a job's events published to the subscriptions that apps above make apart from its
request (``JobSubscription`` rows: Tapis' ``/jobs/subscribe``), each delivered in the shape of
the app that made the row.

- An app registers its delivery shape once, in its ``AppConfig.ready``
  (``delivery_shape_register(origin, shape)``), and publishes its notices with
  ``job_notice_publish``. A notice is plain JSON-able data: ``uuid``, ``type`` (dot-separated
  words, matched against each row's ``type_filter``, where ``*`` stands for any one word),
  ``time``, and whatever the shape reads. ``"last": true`` says no more notices follow for the
  job (Tapis' deleteSubscriptionsMatchingSubject): the origin's rows expire once it is
  published, and are no longer listed or published to.
- Each target of each enabled, unexpired row whose filter matches gets one task
  (``notifications.tasks.job_notice_deliver``, after commit). It sends the shape's JSON the way
  the request's subscriptions are sent (notifications/subscriptions.py: signed with the job's
  webhook secret, the allow-list checked again at delivery, retried after each of
  PORTAL_WEBHOOK_RETRY_DELAYS_S by the watcher's timer) or mails it. Every attempt is a
  JobDelivery row naming the subscription and keeping the notice, so a retry sends the very
  same notice.
- A delivery's id is derived from the notice's uuid and the target, so a notice published twice
  (two signals about one event) is sent once: an attempt already recorded is never sent again.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Any

from django.db.models import Q, QuerySet
from django.utils import timezone

from core import tasks
from jobs.models import Job
from notifications import task_names
from notifications.models import JobDelivery, JobSubscription
from notifications.subscriptions import delivery_attempt, delivery_record, delivery_retry_done

NOTICE_DELIVER_TASK = task_names.JOB_NOTICE_DELIVER

# Called with the keyword arguments job, subscription, notice, target (the row's
# {deliveryMethod, deliveryAddress}) and delivery_id; returns the JSON document to send.
DeliveryShape = Callable[..., dict[str, Any]]
_SHAPES: dict[str, DeliveryShape] = {}


def delivery_shape_register(origin: str, shape: DeliveryShape) -> None:
    """How notifications to the rows of ``origin`` look (once per origin, in AppConfig.ready)."""
    _SHAPES[origin] = shape


def type_filter_matches(type_filter: str, notice_type: str) -> bool:
    """``jobs.JOB_NEW_STATUS.*`` matches ``jobs.JOB_NEW_STATUS.FINISHED``: the same number of
    words, each equal or ``*``."""
    wanted, words = type_filter.split("."), notice_type.split(".")
    if len(wanted) != len(words):
        return False
    return all(w in ("*", word) for w, word in zip(wanted, words, strict=True))


def job_subscriptions_live(
    *, job: Job, origin: str, now: datetime | None = None
) -> QuerySet[JobSubscription]:
    """The job's rows of ``origin`` that have not expired, oldest first."""
    now = now or timezone.now()
    return JobSubscription.objects.filter(job=job, origin=origin).filter(
        Q(expires_at__isnull=True) | Q(expires_at__gt=now)
    )


def notice_delivery_id(notice: dict, subscription: JobSubscription, t_index: int) -> str:
    return str(uuid.uuid5(uuid.UUID(notice["uuid"]), f"{subscription.uuid}:{t_index}"))


def job_notice_publish(*, job: Job, origin: str, notice: dict, now: datetime | None = None) -> int:
    """Fire one delivery task per target of each enabled, unexpired row of ``origin`` whose
    filter matches ``notice["type"]``; returns how many were fired."""
    now = now or timezone.now()
    live = job_subscriptions_live(job=job, origin=origin, now=now)
    fired = 0
    for row in live.filter(enabled=True):
        if not type_filter_matches(row.type_filter, notice["type"]):
            continue
        for t_index in range(len(row.targets)):
            delivery_id = notice_delivery_id(notice, row, t_index)
            tasks.fire(NOTICE_DELIVER_TASK, row.pk, t_index, delivery_id, 1, notice)
            fired += 1
    if notice.get("last"):
        live.update(expires_at=now, updated=now)
    return fired


def job_notice_deliver(
    *, subscription_id: int | None, t_index: int, delivery_id: str, attempt: int, notice: dict
) -> JobDelivery | None:
    """One attempt of one notice to one target; schedules the next attempt when it failed.
    Nothing is sent for an attempt already recorded, nor once the row is deleted."""
    if JobDelivery.objects.filter(delivery_id=delivery_id, attempt=attempt).exists():
        delivery_retry_done(delivery_id, attempt)
        return None
    rows = JobSubscription.objects.select_related("job__project", "job__owner")
    # None: the row was deleted after an attempt failed (its delivery keeps no row then).
    row = rows.filter(pk=subscription_id).first() if subscription_id is not None else None
    if row is None or not 0 <= t_index < len(row.targets):
        delivery_retry_done(delivery_id, attempt)  # unsubscribed meanwhile: nothing more
        return None
    job, target = row.job, row.targets[t_index]
    method, address, event = target["deliveryMethod"], target["deliveryAddress"], notice["type"]
    shape = _SHAPES.get(row.origin)
    if shape is None:
        outcome: tuple[int | None, str, bool] = (
            None,
            f"refused: nothing delivers {row.origin} subscriptions on this site",
            True,
        )
    else:
        document = shape(
            job=job, subscription=row, notice=notice, target=target, delivery_id=delivery_id
        )
        body = json.dumps(document, separators=(",", ":"), sort_keys=True).encode()
        text = json.dumps(document, indent=2, sort_keys=True) + "\n"
        outcome = delivery_attempt(
            job=job,
            method=method,
            address=address,
            event=event,
            delivery_id=delivery_id,
            attempt=attempt,
            body=body,
            mail=(f"[GPU Portal] {job.name}: {event}", text),
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
            NOTICE_DELIVER_TASK, row.pk, t_index, delivery_id, next_attempt, notice
        ),
        t_index=t_index,
        subscription_id=row.pk,
        notice=notice,
    )
