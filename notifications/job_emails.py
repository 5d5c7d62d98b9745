"""E-mails a job's request asks for (``request.extra.emailOn*``), sent by a background task.

GPULab's lists: emailOnQueue (QUEUED), emailOnRun (RUNNING), emailOnEnd (FINISHED, FAILED,
CANCELLED), emailOnHalt (HALTED) and emailOnRestart (a continuation job was queued). The mail
backend is Django's (console by default: set PORTAL_EMAIL_BACKEND and the SMTP settings).
"""

from django.conf import settings
from django.core.mail import send_mail

from accounts.emails import HIDDEN_EMAIL
from core.tasks import fire
from jobs.models import Job
from jobs.states import JobStatus
from notifications import task_names
from notifications.subscriptions import subscriptions_request

NOTIFY_TASK = task_names.JOB_NOTIFY
LIST_FOR_STATUS: dict[str, str] = {
    JobStatus.QUEUED: "emailOnQueue",
    JobStatus.RUNNING: "emailOnRun",
    JobStatus.FINISHED: "emailOnEnd",
    JobStatus.FAILED: "emailOnEnd",
    JobStatus.CANCELLED: "emailOnEnd",
    JobStatus.HALTED: "emailOnHalt",
}
RESTART = "RESTARTED"


def recipients(job: Job, event: str) -> list[str]:
    key = "emailOnRestart" if event == RESTART else LIST_FOR_STATUS.get(event)
    if key is None or "request" in job.get_deferred_fields():
        return []
    # The hidden placeholder (a PEM without a real address) is nobody's mailbox.
    addresses = (job.request.get("extra") or {}).get(key) or []
    return [a for a in addresses if a != HIDDEN_EMAIL]


def job_notify_request(*, job: Job, event: str) -> None:
    """Fire the notification task after commit when the job's request asks for this event,
    and the deliveries of the job's subscriptions (notifications/subscriptions.py). Called by
    the receivers of jobs' signals (notifications/receivers.py)."""
    if recipients(job, event):
        fire(NOTIFY_TASK, job.pk, event)
    subscriptions_request(job=job, event=event)


def job_notify_send(*, job_id: int, event: str) -> int:
    """Send the e-mail; returns how many were sent (0 when the job or its list is gone)."""
    job = Job.objects.select_related("project", "owner").filter(pk=job_id).first()
    if job is None:
        return 0
    to = recipients(job, event)
    if not to:
        return 0
    what = "was restarted (a continuation job is queued)" if event == RESTART else f"is {event}"
    lines = [
        f"Job {job.name} ({job.uuid}) of project {job.project.name} {what}.",
        f"Status now: {job.status}.",
    ]
    if job.end_reason:
        lines.append(f"Reason: {job.end_reason}")
    if settings.PORTAL_BASE_URL:
        lines.append(f"{settings.PORTAL_BASE_URL.rstrip('/')}/jobs/{job.uuid}/")
    return send_mail(
        subject=f"[GPU Portal] {job.name} {what}",
        message="\n".join(lines) + "\n",
        from_email=None,
        recipient_list=to,
        fail_silently=False,
    )
