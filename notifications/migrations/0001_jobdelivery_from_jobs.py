"""JobDelivery moved here from ``jobs`` (issue 25 item 1) without touching a row: its table stays
``jobs_jobdelivery`` (state only here; jobs.0023_jobdelivery_to_notifications drops it from the
jobs state). Its content type follows, so permissions granted on it
(``notifications.view_jobdelivery``) and the admin's history stay attached. A fresh database has
no ``jobs.jobdelivery`` content type yet: nothing to do then.
"""

import django.db.models.deletion
from django.db import migrations, models


def _content_type_move(apps, schema_editor, *, old: str, new: str) -> None:
    ContentType = apps.get_model("contenttypes", "ContentType")
    db = schema_editor.connection.alias
    if ContentType.objects.using(db).filter(app_label=new, model="jobdelivery").exists():
        return
    ContentType.objects.using(db).filter(app_label=old, model="jobdelivery").update(
        app_label=new
    )


def content_type_to_notifications(apps, schema_editor):
    _content_type_move(apps, schema_editor, old="jobs", new="notifications")


def content_type_to_jobs(apps, schema_editor):
    _content_type_move(apps, schema_editor, old="notifications", new="jobs")


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("contenttypes", "0002_remove_content_type_name"),
        # The last jobs migration with JobDelivery in its state (and its last change there).
        ("jobs", "0021_job_runtime_holder"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="JobDelivery",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        ("delivery_id", models.UUIDField()),
                        ("event", models.CharField(max_length=16)),
                        (
                            "method",
                            models.CharField(
                                choices=[("EMAIL", "Email"), ("WEBHOOK", "Webhook")],
                                max_length=8,
                            ),
                        ),
                        ("address", models.CharField(max_length=2000)),
                        ("attempt", models.PositiveSmallIntegerField()),
                        ("time", models.DateTimeField()),
                        ("ok", models.BooleanField(default=False)),
                        ("status_code", models.PositiveSmallIntegerField(blank=True, null=True)),
                        ("error", models.CharField(blank=True, max_length=1000)),
                        ("retry_in_s", models.PositiveIntegerField(blank=True, null=True)),
                        ("retry_at", models.DateTimeField(blank=True, null=True)),
                        ("subscription_index", models.PositiveSmallIntegerField(default=0)),
                        ("target_index", models.PositiveSmallIntegerField(default=0)),
                        (
                            "job",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="deliveries",
                                to="jobs.job",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "jobs_jobdelivery",
                        "ordering": ["time", "id"],
                        "indexes": [
                            models.Index(fields=["job", "time"], name="job_delivery_by_job"),
                            models.Index(
                                condition=models.Q(("retry_at__isnull", False)),
                                fields=["retry_at"],
                                name="job_delivery_retry_due",
                            ),
                        ],
                    },
                ),
            ],
            database_operations=[],
        ),
        migrations.RunPython(content_type_to_notifications, content_type_to_jobs),
    ]
