"""What Tapis' subscriptions are told, and in which shape (docs/tapis.md, "Subscriptions").

A job's events become notices of Tapis' event types, ``jobs.<event type>.<detail>``, published
to the job's Tapis subscriptions (notifications/notices.py: ``job_notice_publish`` fires a
delivery per matching target, signed and retried as the portal's own webhooks are):

- ``JOB_NEW_STATUS.<Tapis status>`` each time the job's Tapis status changes (the status
  derived from the portal state and the latest stage, jobs/transitions.py): on a portal
  status change (``jobs.signals.job_status_changed``) and on a stage recorded in its history
  (a JobEvent saved with ``stage``). ``data`` holds the new and the old Tapis status. The last
  status (FINISHED, CANCELLED, FAILED) says ``deleteSubscriptionsMatchingSubject``: the job's
  subscriptions expire once it is published, as Tapis deletes them.
- ``JOB_ERROR_MESSAGE.FAILED`` when the job fails, with its end reason, before that status.
- ``JOB_USER_EVENT.<eventDetail>`` for each sendEvent, ``data`` the sender's eventData.
- ``JOB_SUBSCRIPTION.added`` / ``.removed`` (``ADDED`` for those a submit made), as Tapis names
  them, when subscriptions are made or deleted.

Each notification is Tapis' ``Notification`` (``tapis_notification``, registered as the
delivery shape of origin ``tapis``): the notification's uuid, tenant, subscription name,
delivery target, created, and the ``Event`` (source, type, subject: the job's uuid, data: JSON
text, seriesId, timestamp, deleteSubscriptionsMatchingSubject, tenant, user, uuid, received).

A notice's uuid is derived from the job and the history event it tells of, so two signals about
one event publish one notice, delivered once. A receiver never raises: a notification that
cannot be made is logged, never a failed launch or a lost status e-mail.
"""

from __future__ import annotations

import json
import logging
import uuid
from typing import Any

from django.db.models import Q
from django.db.models.signals import post_save
from django.utils import timezone

from core.timefmt import utc_z
from jobs.models import Job, JobEvent
from jobs.signals import job_status_changed
from jobs.transitions import tapis_status
from notifications.models import JobSubscription
from notifications.notices import delivery_shape_register, job_notice_publish
from tapis.shapes import TENANT

log = logging.getLogger(__name__)

ORIGIN = "tapis"
SERVICE = "jobs"
# Event.source: the service that sent the event, as the portal names its Tapis Jobs API.
SOURCE = f"tapis://{TENANT}/{SERVICE}"
FINAL_STATUSES = ("FINISHED", "CANCELLED", "FAILED")


def subscription_name(row: JobSubscription) -> str:
    return f"{SERVICE}~{row.job.uuid}~{row.uuid.hex[:8]}"


def _base(job: Job, message: str) -> dict[str, Any]:
    return {
        "jobName": job.name,
        "jobUuid": str(job.uuid),
        "jobOwner": job.owner.username,
        "message": message,
    }


def _notice(job: Job, event_type: str, detail: str, data: str, key: str, *, last=False) -> dict:
    return {
        "uuid": str(uuid.uuid5(job.uuid, key)),
        "type": f"{SERVICE}.{event_type}.{detail}",
        "time": utc_z(timezone.now()),
        "data": data,
        "last": last,
    }


def _publish(job: Job, notice: dict) -> int:
    return job_notice_publish(job=job, origin=ORIGIN, notice=notice)


def _subscribed(job_id: int) -> bool:
    return JobSubscription.objects.filter(job_id=job_id, origin=ORIGIN).exists()


# --- JOB_NEW_STATUS ----------------------------------------------------------------------------


def tapis_status_change(job: Job, upto: JobEvent) -> tuple[str | None, str] | None:
    """(old, new) Tapis status when the history event ``upto`` changed it (old None for the
    first one), else None. The history's status changes and stages up to that event, replayed
    through the one mapping (jobs.transitions.tapis_status). A status change is any event
    with ``new_state`` (job_transition may record one as a Warning or an Error)."""
    rows = (
        JobEvent.objects.filter(job_id=job.pk)
        .filter(~Q(new_state="") | ~Q(stage=""))
        .filter(Q(time__lt=upto.time) | Q(time=upto.time, id__lte=upto.pk))
        .order_by("time", "id")
        .values_list("new_state", "stage")
    )
    state, stage = "QUEUED", ""
    before: str | None = None
    after: str | None = None
    for new_state, new_stage in rows:
        before = after
        if new_stage:
            stage = new_stage
        elif new_state:
            state = new_state
        after = tapis_status(state, stage)
    if after is None or after == before:
        return None
    return before, after


def _status_data(job: Job, old: str | None, new: str) -> str:
    message = f"The job has transitioned to a new status: {new}."
    if old:
        message += f" The previous job status was {old}."
    data = {**_base(job, message), "newJobStatus": new, "oldJobStatus": old}
    if new in FINAL_STATUSES:  # Tapis adds what the run left behind to the last status
        outcome = None if job.exit_code is None else "FINISHED" if job.exit_code == 0 else "FAILED"
        data.update(
            blockedCount=0,
            remoteJobId=job.container_id or None,
            remoteJobId2=None,
            remoteOutcome=outcome,
            remoteResultInfo=None if job.exit_code is None else str(job.exit_code),
            remoteQueue=job.slave.name if job.slave is not None else None,
            remoteSubmitted=utc_z(job.started_at),
            remoteStarted=utc_z(job.started_at),
            remoteEnded=utc_z(job.ended_at),
        )
    return json.dumps(data)


def tapis_status_publish(job: Job, event: JobEvent) -> int:
    """The JOB_NEW_STATUS notice of ``event`` (and JOB_ERROR_MESSAGE before a FAILED), when it
    changed the job's Tapis status."""
    change = tapis_status_change(job, event)
    if change is None:
        return 0
    old, new = change
    fired = 0
    if new == "FAILED":
        reason = job.end_reason or event.message or "the job failed"
        error = {**_base(job, reason), "jobStatus": new}
        notice = _notice(job, "JOB_ERROR_MESSAGE", new, json.dumps(error), f"error:{event.pk}")
        fired += _publish(job, notice)
    data = _status_data(job, old, new)
    last = new in FINAL_STATUSES
    notice = _notice(job, "JOB_NEW_STATUS", new, data, f"status:{event.pk}", last=last)
    return fired + _publish(job, notice)


def on_job_status_changed(sender, *, job: Job, status: str, **kwargs) -> None:
    """A portal status entered: the history event that recorded it (the latest to it)."""
    try:
        if not _subscribed(job.pk):
            return
        event = (
            JobEvent.objects.filter(job_id=job.pk, new_state=status)
            .order_by("-time", "-id")
            .first()
        )
        if event is not None:
            full = Job.objects.select_related("owner", "slave").get(pk=job.pk)
            tapis_status_publish(full, event)
    except Exception:
        log.exception("Tapis notices of job %s entering %s", job.uuid, status)


def on_job_event_saved(sender, *, instance: JobEvent, created: bool, **kwargs) -> None:
    """A stage recorded (jobs.transitions.job_stage_record): it may change the Tapis
    status while the portal state stays (STAGING_INPUTS, ARCHIVING, ...)."""
    if not created or not instance.stage:
        return
    try:
        if _subscribed(instance.job_id):
            job = Job.objects.select_related("owner", "slave").get(pk=instance.job_id)
            tapis_status_publish(job, instance)
    except Exception:
        log.exception("Tapis notices of stage %s of job %s", instance.stage, instance.job_id)


# --- JOB_USER_EVENT, JOB_SUBSCRIPTION ----------------------------------------------------------


def tapis_user_event_publish(*, job: Job, event: JobEvent, detail: str, data: str) -> int:
    """A sendEvent: ``data`` as the sender wrote it (Tapis passes user events through)."""
    return _publish(job, _notice(job, "JOB_USER_EVENT", detail, data, f"user:{event.pk}"))


def tapis_subscription_event_publish(*, job: Job, action: str, count: int) -> int:
    """Subscriptions were ``added`` (``ADDED``: with the job's submission) or ``removed``."""
    if action == "ADDED":
        message = f"{count} subscription(s) created with job submission."
    else:
        message = f"{count} subscription(s) {action}."
    data = {**_base(job, message), "action": action.lower(), "numSubscriptions": count}
    key = f"subscription:{uuid.uuid4()}"  # no history event: each change is its own notice
    return _publish(job, _notice(job, "JOB_SUBSCRIPTION", action, json.dumps(data), key))


# --- the shape ---------------------------------------------------------------------------------


def tapis_notification(
    *, job: Job, subscription: JobSubscription, notice: dict, target: dict, delivery_id: str
) -> dict[str, Any]:
    """Tapis' ``Notification`` around the notice's ``Event``."""
    return {
        "uuid": delivery_id,
        "tenant": TENANT,
        "subscriptionName": subscription_name(subscription),
        "deliveryTarget": target,
        "eventUuid": notice["uuid"],
        "event": {
            "source": SOURCE,
            "type": notice["type"],
            "subject": str(job.uuid),
            "data": notice["data"],
            "seriesId": str(job.uuid),
            "timestamp": notice["time"],
            "deleteSubscriptionsMatchingSubject": bool(notice.get("last")),
            "endSeries": False,
            "tenant": TENANT,
            "user": job.owner.username,
            "uuid": notice["uuid"],
            "received": notice["time"],
        },
        "created": utc_z(timezone.now()),
    }


def tapis_notices_connect() -> None:
    """In TapisConfig.ready: the shape of Tapis' deliveries and the events that make them."""
    delivery_shape_register(ORIGIN, tapis_notification)
    job_status_changed.connect(on_job_status_changed, sender=Job, dispatch_uid="tapis-status")
    post_save.connect(on_job_event_saved, sender=JobEvent, dispatch_uid="tapis-stages")
