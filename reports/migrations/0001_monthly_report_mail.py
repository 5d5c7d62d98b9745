import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("accounts", "0007_directory_sign_in"),
    ]

    operations = [
        migrations.CreateModel(
            name="MonthlyReportMail",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("month", models.CharField(help_text="YYYY-MM", max_length=7)),
                ("sent_at", models.DateTimeField()),
                ("recipients", models.JSONField(blank=True, default=list)),
                (
                    "project",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="report_mails",
                        to="accounts.project",
                    ),
                ),
            ],
            options={
                "ordering": ["-month", "project__name"],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("project", "month"), name="one_report_mail_a_month"
                    )
                ],
            },
        ),
    ]
