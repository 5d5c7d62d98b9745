"""The dotted paths of the notifications app's background tasks (see jobs/task_names.py for why
they are constants: django-q2 stores them in its queue).

Until issue 25 these tasks were ``jobs.tasks.job_notify`` and ``jobs.tasks.job_deliver``; tasks
queued under those paths by an older release still run: the portal's q cluster makes the old
paths resolve to these (portal/moved_tasks.py), since jobs may not import this app."""

# GPULab's e-mail of one event (request.extra.emailOn*: notifications/job_emails.py).
JOB_NOTIFY = "notifications.tasks.job_notify"
# One attempt of a subscription's delivery (notifications/subscriptions.py); the watcher's
# timer fires the retries.
JOB_DELIVER = "notifications.tasks.job_deliver"
# One attempt of a notice's delivery to a JobSubscription row (notifications/notices.py: Tapis'
# subscriptions); the watcher's timer fires the retries.
JOB_NOTICE_DELIVER = "notifications.tasks.job_notice_deliver"

ALL = (JOB_NOTIFY, JOB_DELIVER, JOB_NOTICE_DELIVER)
