"""Notifications of a job's life, one floor above ``jobs``: GPULab's e-mail lists
(``request.extra.emailOn*``: job_emails.py) and the portal's subscriptions (``request.notifications``:
signed webhooks and e-mails with retries, every attempt a JobDelivery: subscriptions.py).

``jobs`` never imports this app: it sends the signals of jobs/signals.py (a status entered, a
restart, the watcher starting, the job page drawn) and receivers.py answers them. The request
section itself is checked at submit by jobs/spec/v2_notifications.py (jobs' submit refuses a bad
one with its field path), which this app reads for the allow-list rules."""
