"""Mail each project's usage report of a month to its managers (the admins in copy):
``manage.py reports_mail --month 2026-10``; the 1st of each month's schedule does the month
before by itself (reports/tasks.py)."""

from datetime import UTC

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from reports.mail import previous_month, report_mails_send
from reports.periods import month_period


class Command(BaseCommand):
    help = "E-mail each project's usage report of a month (UTC) to its managers and the admins."

    def add_arguments(self, parser):
        parser.add_argument("--month", help="YYYY-MM (default: the month before this one)")
        parser.add_argument(
            "--force", action="store_true", help="mail projects that got this month's already"
        )

    def handle(self, *args, **options):
        month = options["month"] or previous_month(timezone.now())
        try:
            month_period(month, zone=UTC)
        except ValueError as error:
            raise CommandError(str(error)) from None
        sent = report_mails_send(month=month, force=options["force"])
        self.stdout.write(f"{month}: {sent} project report{'s' if sent != 1 else ''} mailed")
