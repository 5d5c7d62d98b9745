"""Tapis' job subscriptions (docs/tapis.md, "Subscriptions"): a ReqSubscribe checked, kept as a
notifications ``JobSubscription`` row of origin ``tapis`` (notifications/notices.py delivers to
it, in the shape tapis/notices.py writes), listed as ``TapisSubscription``, deleted one at a
time or all of a job's.

- Who: the job's owner or an admin subscribes and deletes (Tapis' rule; a subscription's own
  owner may delete it too); whoever reads the job in full lists them (people the job is shared
  with read them, never change them). Only a job that has not ended takes new ones.
- Bounds: at most MAX_SUBSCRIPTIONS live subscriptions a job and MAX_TARGETS targets each (the
  request section's limits); webhooks only to hosts of the site's allow-list and e-mail to
  addresses the mailer takes: the request section's one rule (jobs/spec/v2_notifications.py),
  checked again at each delivery.
- ``ttlminutes`` as Tapis applies it: a week when absent or below 1, at most four weeks. A job's
  subscriptions also expire with its last status, as Tapis deletes them then.
- The type filter is Tapis' ``jobs.<eventCategoryFilter>.*`` (``jobs.*.*`` for ALL), matched
  against each notice's type ``jobs.<event type>.<detail>``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from accounts.permissions import user_is_admin
from core.errors import Conflict, NotAllowed
from core.timefmt import utc_z
from jobs.models import Job
from jobs.selectors import job_list_visible_to, job_sees_full
from jobs.spec import FieldError, SpecError
from jobs.spec.checks import Errors
from jobs.spec.v2_notifications import MAX_SUBSCRIPTIONS, normalize_notifications
from jobs.states import TERMINAL
from notifications.models import JobSubscription
from notifications.notices import job_subscriptions_live
from tapis.notices import ORIGIN, SERVICE, subscription_name, tapis_subscription_event_publish
from tapis.shapes import TENANT

# Tapis' ReqSubscribe.eventCategoryFilter (docs/tapis.md says which ones the portal sends).
EVENT_CATEGORIES = (
    "JOB_NEW_STATUS",
    "JOB_INPUT_TRANSACTION_ID",
    "JOB_ARCHIVE_TRANSACTION_ID",
    "JOB_SUBSCRIPTION",
    "JOB_SHARE_EVENT",
    "JOB_ERROR_MESSAGE",
    "JOB_USER_EVENT",
    "ALL",
)
# ttlminutes is the field tapipy sends (its ReqSubscribe); ttlMinutes the one Tapis' service reads.
SUBSCRIBE_FIELDS = (
    "description",
    "enabled",
    "eventCategoryFilter",
    "deliveryTargets",
    "ttlminutes",
    "ttlMinutes",
)
TTL_DEFAULT_MINUTES = 7 * 24 * 60
TTL_MAX_MINUTES = 4 * TTL_DEFAULT_MINUTES
DESCRIPTION_MAX = 2048
_SECTION = "subscriptions"  # where the request section's checks name what they find


@dataclass(frozen=True)
class TapisSubscribe:
    """A checked ReqSubscribe."""

    description: str
    enabled: bool
    category: str
    targets: list[dict]
    ttl_minutes: int


def type_filter(category: str) -> str:
    return f"{SERVICE}.*.*" if category == "ALL" else f"{SERVICE}.{category}.*"


def _at(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def tapis_subscribe_check(item: object, where: str, errs: Errors) -> TapisSubscribe | None:
    """A ReqSubscribe (``where``: its path in the request, "" for the body itself): every
    problem added to ``errs`` by its field path; None when there was one. A missing
    eventCategoryFilter means JOB_NEW_STATUS (the portal's default before Tapis' own)."""
    if not isinstance(item, dict):
        errs.add(where or "(document)", "must be an object (Tapis' ReqSubscribe)")
        return None
    before = len(errs.items)
    for key in item:
        if key not in SUBSCRIBE_FIELDS:
            errs.add(_at(where, str(key)), "unknown field")
    description = item.get("description")
    if description is None:
        description = ""
    if not isinstance(description, str) or len(description) > DESCRIPTION_MAX:
        errs.add(
            _at(where, "description"), f"must be a string of at most {DESCRIPTION_MAX} characters"
        )
    enabled = item.get("enabled", True)
    if not isinstance(enabled, bool):
        errs.add(_at(where, "enabled"), "must be true or false")
    category = item.get("eventCategoryFilter", "JOB_NEW_STATUS")
    if category not in EVENT_CATEGORIES:
        errs.add(_at(where, "eventCategoryFilter"), f"must be one of {', '.join(EVENT_CATEGORIES)}")
    ttl = item.get("ttlminutes", item.get("ttlMinutes"))
    if ttl is not None and (isinstance(ttl, bool) or not isinstance(ttl, int)):
        errs.add(_at(where, "ttlminutes"), "must be a whole number of minutes")
        ttl = None
    targets = _targets(item.get("deliveryTargets"), where, errs)
    if len(errs.items) > before:
        return None
    if ttl is None or ttl < 1:
        ttl = TTL_DEFAULT_MINUTES
    return TapisSubscribe(
        description=description,
        enabled=enabled,
        category=category,
        targets=targets,
        ttl_minutes=min(ttl, TTL_MAX_MINUTES),
    )


def _targets(raw: object, where: str, errs: Errors) -> list[dict]:
    """The targets through the request section's own checks (the allow-list, e-mail addresses,
    MAX_TARGETS), their problems renamed to this request's paths."""
    found = Errors()
    section = {"subscriptions": [{"eventTypes": ["ALL"], "deliveryTargets": raw}]}
    checked = normalize_notifications(
        section, _SECTION, found, allowed_hosts=settings.PORTAL_WEBHOOK_ALLOWED_HOSTS
    )
    prefix = f"{_SECTION}.subscriptions[0]."
    for problem in found.items:
        errs.add(_at(where, problem.path.removeprefix(prefix)), problem.message)
    if found.items:
        return []
    return checked["subscriptions"][0]["deliveryTargets"]


def tapis_subscribes_check(items: list, errs: Errors) -> list[TapisSubscribe]:
    """The ``subscriptions`` of a submit request (at most MAX_SUBSCRIPTIONS)."""
    if len(items) > MAX_SUBSCRIPTIONS:
        errs.add("subscriptions", f"must have at most {MAX_SUBSCRIPTIONS} subscriptions")
        return []
    checked = [
        tapis_subscribe_check(item, f"subscriptions[{i}]", errs) for i, item in enumerate(items)
    ]
    return [item for item in checked if item is not None]


def tapis_subscriptions_create(
    *, job: Job, owner, subscribes: list[TapisSubscribe], now: datetime | None = None
) -> list[JobSubscription]:
    """Rows for checked requests (no permission check: the submit and the route check)."""
    now = now or timezone.now()
    return JobSubscription.objects.bulk_create(
        JobSubscription(
            job=job,
            origin=ORIGIN,
            owner=owner,
            description=item.description,
            enabled=item.enabled,
            type_filter=type_filter(item.category),
            targets=item.targets,
            ttl_minutes=item.ttl_minutes,
            expires_at=now + timedelta(minutes=item.ttl_minutes),
            created=now,
            updated=now,
        )
        for item in subscribes
    )


def _require_owner(job: Job, user) -> None:
    if job.owner_id != user.pk and not user_is_admin(user):
        raise NotAllowed("only the job's owner or an admin may change its subscriptions")


def tapis_job_subscribe(*, job: Job, user, request: object) -> JobSubscription:
    """Tapis' subscribe: one more subscription to a job that has not ended. SpecError names
    each bad field; NotAllowed unless the caller owns the job or is an admin; Conflict once it
    ended or holds MAX_SUBSCRIPTIONS live ones."""
    _require_owner(job, user)
    errs = Errors()
    checked = tapis_subscribe_check(request, "", errs)
    if checked is None:
        raise SpecError(errs.items or [FieldError("(document)", "not a subscription")])
    with transaction.atomic():
        # One subscriber of this job at a time, so that the bound below holds under races.
        locked = Job.objects.select_for_update().filter(pk=job.pk).values_list("status", flat=True)
        if locked.first() in TERMINAL:
            raise Conflict(f"job {job.uuid} has ended ({job.status}): it takes no subscriptions")
        if job_subscriptions_live(job=job, origin=ORIGIN).count() >= MAX_SUBSCRIPTIONS:
            raise Conflict(
                f"job {job.uuid} has {MAX_SUBSCRIPTIONS} subscriptions already: delete one first"
            )
        [row] = tapis_subscriptions_create(job=job, owner=user, subscribes=[checked])
        tapis_subscription_event_publish(job=job, action="added", count=1)
    return row


def tapis_job_subscriptions(*, job: Job, limit: int, skip: int) -> list[JobSubscription]:
    """A job's live Tapis subscriptions, oldest first (the caller reads the job in full)."""
    rows = job_subscriptions_live(job=job, origin=ORIGIN).select_related("owner", "job__owner")
    return list(rows[skip : skip + limit])


def tapis_subscription_visible(*, user, uuid) -> JobSubscription | None:
    """The live Tapis subscription of that uuid, when the caller reads its job in full."""
    row = (
        JobSubscription.objects.filter(uuid=uuid, origin=ORIGIN)
        .select_related("job", "owner")
        .first()
    )
    if row is None or (row.expires_at is not None and row.expires_at <= timezone.now()):
        return None
    job = job_list_visible_to(user).filter(pk=row.job_id).first()
    if job is None or not job_sees_full(user, job):
        return None
    return row


def tapis_subscription_delete(*, subscription: JobSubscription, user) -> int:
    """Delete one subscription: its job's owner, an admin or its own owner."""
    if subscription.owner_id != user.pk:
        _require_owner(subscription.job, user)
    with transaction.atomic():
        deleted, _ = JobSubscription.objects.filter(pk=subscription.pk).delete()
        if deleted:
            tapis_subscription_event_publish(job=subscription.job, action="removed", count=1)
    return 1 if deleted else 0


def tapis_job_subscriptions_delete(*, job: Job, user) -> int:
    """Delete every live Tapis subscription of a job (its owner or an admin); how many."""
    _require_owner(job, user)
    with transaction.atomic():
        live = list(job_subscriptions_live(job=job, origin=ORIGIN).values_list("pk", flat=True))
        deleted, _ = JobSubscription.objects.filter(pk__in=live).delete()
        if deleted:
            tapis_subscription_event_publish(job=job, action="removed", count=deleted)
    return deleted


def tapis_subscription_json(row: JobSubscription) -> dict[str, Any]:
    """``TapisSubscription`` of Tapis' Jobs schema."""
    owner = row.owner if row.owner is not None else row.job.owner
    return {
        "tenant": TENANT,
        "name": subscription_name(row),
        "description": row.description,
        "owner": owner.username,
        "enabled": row.enabled,
        "typeFilter": row.type_filter,
        "subjectFilter": str(row.job.uuid),
        "deliveryTargets": row.targets,
        "ttlMinutes": row.ttl_minutes,
        "uuid": str(row.uuid),
        "expiry": utc_z(row.expires_at),
        "created": utc_z(row.created),
        "updated": utc_z(row.updated),
    }
