"""The job page's card of subscriptions, webhook secret and deliveries
(templates/notifications/_job_deliveries.html), registered as a section of the job page
(jobs/web/page_hooks.py) in ``NotificationsConfig.ready``. It lives in the page's polled part,
so deliveries appear as they are made while the job is active."""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from jobs.models import Job
from jobs.web.page_hooks import JobSection
from notifications.models import JobSubscription
from notifications.subscriptions import (
    SIGNATURE_HEADER,
    job_deliveries_list,
    job_webhook_secret_for,
)

DELIVERY_ROWS = 50


def job_deliveries_section(job: Job, user, full: bool) -> dict[str, Any] | None:
    """For whoever reads the job in full, when its request subscribes (None: no card)."""
    if not full or "request" in job.get_deferred_fields():
        return None
    subscriptions = ((job.request or {}).get("notifications") or {}).get("subscriptions") or []
    # Those an app made apart from the request (Tapis' /jobs/subscribe), in the same words.
    subscriptions = subscriptions + [
        {
            "enabled": row.enabled and (row.expires_at is None or row.expires_at > timezone.now()),
            "eventTypes": [row.type_filter],
            "deliveryTargets": row.targets,
            "description": row.description,
        }
        for row in JobSubscription.objects.filter(job=job).order_by("created", "id")[:50]
    ]
    if not subscriptions:
        return None
    return {
        "subscriptions": subscriptions,
        "signature_header": SIGNATURE_HEADER,
        "webhook_secret": job_webhook_secret_for(job=job, user=user),
        "deliveries": job_deliveries_list(job=job, user=user, limit=DELIVERY_ROWS),
    }


DELIVERIES_SECTION = JobSection(
    name="notifications",
    template="notifications/_job_deliveries.html",
    context=job_deliveries_section,
)
