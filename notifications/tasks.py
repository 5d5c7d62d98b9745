"""django-q2 entry points of the notifications app: a few lines each, load by id, call a service.

Their dotted paths are stored in the task queue (notifications/task_names.py). The services are
looked up on their modules when a task runs, so a test that replaces one replaces it here too.
"""

from notifications import job_emails, notices, subscriptions


def job_notify(job_id: int, event: str) -> None:
    job_emails.job_notify_send(job_id=job_id, event=event)


def job_deliver(
    job_id: int, event: str, s_index: int, t_index: int, delivery_id: str, attempt: int
) -> None:
    subscriptions.subscription_deliver(
        job_id=job_id,
        event=event,
        s_index=s_index,
        t_index=t_index,
        delivery_id=delivery_id,
        attempt=attempt,
    )


def job_notice_deliver(
    subscription_id: int | None, t_index: int, delivery_id: str, attempt: int, notice: dict
) -> None:
    notices.job_notice_deliver(
        subscription_id=subscription_id,
        t_index=t_index,
        delivery_id=delivery_id,
        attempt=attempt,
        notice=notice,
    )
