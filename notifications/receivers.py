"""What the notifications app does when jobs announces something (jobs/signals.py), connected
once in ``NotificationsConfig.ready``. jobs sends; it never imports this app. (Its card on the
job page is registered there too: notifications/web.py.)"""

from __future__ import annotations

import threading

from jobs.models import Job
from jobs.signals import job_restarted, job_status_changed, watcher_started
from notifications.job_emails import RESTART, job_notify_request
from notifications.subscriptions import deliveries_retry_loop


def on_job_status_changed(sender, *, job: Job, status: str, **kwargs) -> None:
    """The request's e-mail list for this status and its subscriptions' deliveries."""
    job_notify_request(job=job, event=status)


def on_job_restarted(sender, *, job: Job, follow: Job, **kwargs) -> None:
    """The old job's emailOnRestart list (and subscriptions that take every event)."""
    job_notify_request(job=job, event=RESTART)


def on_watcher_started(sender, *, stop: threading.Event, **kwargs) -> None:
    """Retries of failed webhook and e-mail deliveries, each sent when it is due, on a thread of
    the watcher process (ends when the watcher stops)."""
    threading.Thread(
        target=deliveries_retry_loop, args=(stop,), name="deliveries", daemon=True
    ).start()


def receivers_connect() -> None:
    job_status_changed.connect(
        on_job_status_changed, sender=Job, dispatch_uid="notifications-status"
    )
    job_restarted.connect(on_job_restarted, sender=Job, dispatch_uid="notifications-restart")
    watcher_started.connect(on_watcher_started, dispatch_uid="notifications-retry-timer")
