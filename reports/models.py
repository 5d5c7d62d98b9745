"""What the monthly e-mail sent: one row per project and month, so a schedule that fires twice
(a retry, two clusters) never mails a project's report twice."""

from django.db import models


class MonthlyReportMail(models.Model):
    project = models.ForeignKey(
        "accounts.Project", on_delete=models.CASCADE, related_name="report_mails"
    )
    month = models.CharField(max_length=7, help_text="YYYY-MM")
    sent_at = models.DateTimeField()
    recipients = models.JSONField(default=list, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "month"], name="one_report_mail_a_month")
        ]
        ordering = ["-month", "project__name"]

    def __str__(self) -> str:
        return f"{self.project} {self.month}"
