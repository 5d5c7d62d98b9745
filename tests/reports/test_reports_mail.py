"""The monthly e-mail: each project's report of a month to its managers, the admins in copy,
with the CSV attached; once per project and month; on the 1st by a schedule."""

import csv
import io
from datetime import UTC, datetime

import pytest
from django.core import mail
from django.core.management import CommandError, call_command

from core import tasks
from reports import task_names
from reports.mail import previous_month
from reports.models import MonthlyReportMail


@pytest.fixture(autouse=True)
def locmem(settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"


def test_each_projects_report_goes_to_its_managers_with_the_admins_in_copy(
    october, admin_user, capsys
):
    call_command("reports_mail", "--month", "2026-10")
    assert "2026-10: 2 project reports mailed" in capsys.readouterr().out
    by_subject = {m.subject: m for m in mail.outbox}
    vision = by_subject["[GPU Portal] Usage of vision in 2026-10"]
    assert (vision.to, vision.cc) == (["carol@example.org"], ["root@example.org"])
    assert "GPU-hours:           13.00" in vision.body
    assert "Jobs ended:          1 finished, 1 failed, 1 cancelled, 1 halted" in vision.body
    name, content, mimetype = vision.attachments[0]
    assert (name, mimetype) == ("portal-usage-vision-20261001-20261031.csv", "text/csv")
    lines = list(csv.DictReader(io.StringIO(content)))
    assert [(r["project"], r["user"], r["gpu_seconds"]) for r in lines] == [
        ("vision", "alice", "18000.0"),
        ("vision", "carol", "28800.0"),
        ("total", "total", "46800.0"),
    ]
    assert vision.attachments[1][0] == "portal-sizes-vision-20261001-20261031.csv"
    # speech has no manager: its report goes to the admins.
    speech = by_subject["[GPU Portal] Usage of speech in 2026-10"]
    assert (speech.to, speech.cc) == (["root@example.org"], [])
    assert MonthlyReportMail.objects.filter(month="2026-10").count() == 2


def test_a_month_is_mailed_once_unless_forced(october, admin_user):
    call_command("reports_mail", "--month", "2026-10")
    call_command("reports_mail", "--month", "2026-10")
    assert len(mail.outbox) == 2
    call_command("reports_mail", "--month", "2026-10", "--force")
    assert len(mail.outbox) == 4


def test_a_month_without_runs_mails_nothing(october, admin_user):
    call_command("reports_mail", "--month", "2026-08")
    assert mail.outbox == []


def test_a_bad_month_is_refused():
    with pytest.raises(CommandError, match=r"month: '2026-13' is not a month \(YYYY-MM\)"):
        call_command("reports_mail", "--month", "2026-13")


def test_the_schedule_runs_on_the_first_for_the_month_before(db, october, admin_user, monkeypatch):
    from django_q.models import Schedule

    from portal.schedules import schedules_ensure

    schedules_ensure()
    schedule = Schedule.objects.get(name="monthly usage reports")
    assert schedule.func == task_names.REPORTS_MAIL_MONTHLY
    assert schedule.schedule_type == Schedule.MONTHLY
    assert (schedule.next_run.day, schedule.next_run.hour) == (1, 6)
    schedules_ensure()  # again after the next migrate: still one, its next run kept
    assert Schedule.objects.filter(name="monthly usage reports").count() == 1
    assert previous_month(datetime(2026, 11, 1, 6, tzinfo=UTC)) == "2026-10"
    assert previous_month(datetime(2027, 1, 1, 6, tzinfo=UTC)) == "2026-12"
    monkeypatch.setattr("reports.tasks.timezone.now", lambda: datetime(2026, 11, 1, 6, tzinfo=UTC))
    assert tasks.resolve(task_names.REPORTS_MAIL_MONTHLY)() == 2
    assert task_names.ALL == (task_names.REPORTS_MAIL_MONTHLY,)
