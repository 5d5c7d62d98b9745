"""Thin django-q2 tasks of the reports app (paths in reports/task_names.py)."""

from django.utils import timezone

from reports.mail import previous_month, report_mails_send


def reports_mail_monthly() -> int:
    """Each project's report of the month that just ended, to its managers and the admins."""
    return report_mails_send(month=previous_month(timezone.now()))
