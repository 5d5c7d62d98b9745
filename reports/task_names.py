"""The dotted paths of the reports app's background tasks (see jobs/task_names.py for why they
are constants: django-q2 stores them in its schedules)."""

# The monthly e-mail of each project's report (reports/mail.py), on the 1st of each month.
REPORTS_MAIL_MONTHLY = "reports.tasks.reports_mail_monthly"

ALL = (REPORTS_MAIL_MONTHLY,)
