"""The monthly e-mail: each project's report of a month (per user in the project, as text and as
a CSV attachment, with the sizes table) to the project's managers, the site's admins in copy.

Months are calendar months in UTC, as the limits' budgets are. A project whose jobs neither ran
nor ended in the month gets no mail. Each (project, month) is mailed once
(``MonthlyReportMail``); ``force`` mails it again.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.mail import EmailMessage
from django.db.models import Q
from django.utils import timezone

from accounts.models import Membership, Project
from reports.accounting import UsageReport, sizes_report, usage_report
from reports.exports import download_name, sizes_csv, usage_csv
from reports.models import MonthlyReportMail
from reports.periods import ReportPeriod, month_period

log = logging.getLogger(__name__)


def previous_month(now: datetime) -> str:
    """``YYYY-MM`` of the calendar month (UTC) before the one ``now`` is in."""
    first = now.astimezone(UTC).date().replace(day=1)
    return f"{first - timedelta(days=1):%Y-%m}"


def _hours(value) -> str:
    return f"{float(value or 0):.2f}"


def report_mail_text(project: Project, report: UsageReport) -> str:
    total = report.totals
    lines = [
        f"Usage of project {project.name}, {report.period.label()} (UTC)",
        "",
        f"GPU-hours:           {_hours(total['gpu_hours'])}",
        f"CPU-hours:           {_hours(total['cpu_hours'])}",
        f"Memory GB-hours:     {_hours(total['mem_gb_hours'])}",
        f"Borrowed GPU-hours:  {_hours(total['borrowed_gpu_hours'])}",
        f"Runs:                {total['runs']}",
        "Jobs ended:          "
        + ", ".join(
            f"{total[c]} {c.removeprefix('jobs_')}"
            for c in ("jobs_finished", "jobs_failed", "jobs_cancelled", "jobs_halted")
        ),
        f"Wait p50 / p90:      {total['wait_p50_s'] or 0:.0f} s / {total['wait_p90_s'] or 0:.0f} s",
        "",
        "Per user (GPU-hours, CPU-hours, runs):",
    ]
    for row in sorted(report.rows, key=lambda r: -float(r["gpu_hours"])):
        lines.append(
            f"  {row['user']:<24} {_hours(row['gpu_hours']):>10} {_hours(row['cpu_hours']):>10}"
            f" {row['runs']:>6}"
        )
    lines += ["", "The attached CSV files hold every figure (docs/reports.md names each column)."]
    return "\n".join(lines) + "\n"


def _admin_emails() -> list[str]:
    users = get_user_model().objects.filter(is_superuser=True, is_active=True).exclude(email="")
    return sorted(set(users.values_list("email", flat=True)))


def _manager_emails(project: Project) -> list[str]:
    managers = Membership.objects.filter(
        project=project, role=Membership.Role.MANAGER, user__is_active=True
    ).exclude(user__email="")
    return sorted(set(managers.values_list("user__email", flat=True)))


def report_mail_send(
    *, project: Project, period: ReportPeriod, month: str, now: datetime, force: bool = False
) -> bool:
    """Mail one project's report of ``month``; False when there was nothing to send (no
    activity, no recipient, or sent already without ``force``)."""
    if not force and MonthlyReportMail.objects.filter(project=project, month=month).exists():
        return False
    scope = Q(project=project)
    report = usage_report(by="member", period=period, now=now, scope=scope)
    if not report.rows:
        return False
    to, admins = _manager_emails(project), _admin_emails()
    cc = [a for a in admins if a not in to]
    if not to and not cc:
        log.warning(
            "monthly report of %s for %s: no manager or admin has an e-mail", project, month
        )
        return False
    message = EmailMessage(
        subject=f"[GPU Portal] Usage of {project.name} in {month}",
        body=report_mail_text(project, report),
        from_email=settings.DEFAULT_FROM_EMAIL,
        to=to or cc,
        cc=cc if to else [],
    )
    message.attach(
        download_name(f"usage-{project.name}", period, "csv"), usage_csv(report), "text/csv"
    )
    sizes = sizes_report(period=period, now=now, scope=scope)
    message.attach(
        download_name(f"sizes-{project.name}", period, "csv"), sizes_csv(sizes), "text/csv"
    )
    message.send()
    MonthlyReportMail.objects.update_or_create(
        project=project, month=month, defaults={"sent_at": now, "recipients": [*to, *cc]}
    )
    return True


def report_mails_send(*, month: str, force: bool = False, now: datetime | None = None) -> int:
    """Each project's report of ``month`` (YYYY-MM, UTC); how many mails went out."""
    now = now or timezone.now()
    period = month_period(month, zone=UTC)
    sent = 0
    for project in Project.objects.order_by("name"):
        if report_mail_send(project=project, period=period, month=month, now=now, force=force):
            sent += 1
    return sent
