"""What Tapis users do to a job besides the portal's own actions (docs/tapis.md): hide it from
their Tapis job lists and searches (``hideJob``/``unhideJob``), and send it a user event
(``sendEvent``), recorded in the job's history as every other event and told to the job's
JOB_USER_EVENT subscribers (tapis/notices.py)."""

from __future__ import annotations

import re

from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts.permissions import user_is_admin
from core.errors import Conflict, NotAllowed
from jobs.models import Job, JobEvent
from jobs.selectors import job_can_act
from jobs.spec import FieldError, SpecError
from jobs.states import TERMINAL
from jobs.transitions import job_event_add
from tapis.models import HiddenJob, JobUserEvent
from tapis.notices import tapis_user_event_publish

# eventData: kept whole in the event's message (job_event_add keeps 5000 characters, and the
# message adds the detail and the sender); eventDetail: a short word naming the kind.
EVENT_DATA_MAX = 4096
EVENT_DETAIL_MAX = 64
EVENT_DETAIL_DEFAULT = "DEFAULT"
EVENT_DETAIL_RE = re.compile(r"[A-Za-z0-9_.:-]+")
# A job's history is shown whole on its page: user events cannot grow it without end.
USER_EVENTS_PER_JOB_MAX = 1000


def _require_hider(job: Job, user) -> None:
    if job.owner_id != user.pk and not user_is_admin(user):
        raise NotAllowed("only the job's owner or an admin may hide or unhide it")


def _require_ended(job: Job, verb: str) -> None:
    if job.status not in TERMINAL:
        raise Conflict(f"job {job.uuid} is {job.status}: only an ended job can be {verb}")


def tapis_job_hide(*, job: Job, user, now=None) -> bool:
    """Hide an ended job from its owner's Tapis lists and searches; False when it was hidden
    already (nothing changes)."""
    _require_hider(job, user)
    _require_ended(job, "hidden")
    try:
        with transaction.atomic():
            _, created = HiddenJob.objects.get_or_create(
                job=job, defaults={"hidden_by": user, "hidden_at": now or timezone.now()}
            )
    except IntegrityError:  # hidden meanwhile by another request
        return False
    return created


def tapis_job_unhide(*, job: Job, user) -> bool:
    """Show a hidden job again; False when it was not hidden."""
    _require_hider(job, user)
    _require_ended(job, "unhidden")
    removed, _ = HiddenJob.objects.filter(job=job).delete()
    return bool(removed)


def tapis_job_hidden(job: Job) -> bool:
    return HiddenJob.objects.filter(job=job).exists()


def tapis_job_event_send(*, job: Job, user, data, detail=None) -> JobEvent:
    """Tapis' sendEvent: a user event on a job that has not ended, kept in its history (a
    JOB_USER_EVENT with ``detail`` as eventDetail and ``data`` as description). SpecError
    names each bad field; NotAllowed for those who may not act on the job; Conflict once it
    ended or when it holds USER_EVENTS_PER_JOB_MAX of them."""
    if not job_can_act(user, job):
        raise NotAllowed("only members of the job's project may send it events")
    errors = []
    if not isinstance(data, str) or not data.strip():
        errors.append(FieldError("eventData", "is required: a non-empty string"))
    elif len(data) > EVENT_DATA_MAX:
        errors.append(FieldError("eventData", f"must be at most {EVENT_DATA_MAX} characters"))
    if detail is None or detail == "":
        detail = EVENT_DETAIL_DEFAULT
    if not isinstance(detail, str) or len(detail) > EVENT_DETAIL_MAX:
        errors.append(
            FieldError("eventDetail", f"must be a string of at most {EVENT_DETAIL_MAX} characters")
        )
    elif not EVENT_DETAIL_RE.fullmatch(detail):
        errors.append(
            FieldError("eventDetail", "letters, digits and . _ : - only (it names a kind)")
        )
    if errors:
        raise SpecError(errors)
    if job.status in TERMINAL:
        raise Conflict(f"job {job.uuid} has ended ({job.status}): it takes no more events")
    sent = JobUserEvent.objects.filter(event__job=job).count()
    if sent >= USER_EVENTS_PER_JOB_MAX:
        raise Conflict(f"job {job.uuid} holds {USER_EVENTS_PER_JOB_MAX} user events already")
    with transaction.atomic():
        event = job_event_add(job=job, message=f"user event {detail} from {user.username}: {data}")
        JobUserEvent.objects.create(event=event, detail=detail, sender=user)
        # Subscribers of JOB_USER_EVENT are told (after commit), as Tapis tells them.
        tapis_user_event_publish(job=job, event=event, detail=detail, data=data)
    return event
