"""JobGang moved here from ``jobs`` (issue 25 item 1) without touching a row: its table stays
``jobs_jobgang`` (state only here; jobs.0022_jobgang_to_gangs drops it from the jobs state and
points ``Job.gang`` at this model). Its content type follows, so permissions granted on it
(``gangs.view_jobgang``) and the admin's history stay attached. A fresh database has no
``jobs.jobgang`` content type yet: nothing to do then.
"""

import uuid

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

STATUSES = [
    ("ONHOLD", "Onhold"),
    ("QUEUED", "Queued"),
    ("ASSIGNED", "Assigned"),
    ("STARTING", "Starting"),
    ("RUNNING", "Running"),
    ("CANCELLING", "Cancelling"),
    ("CANCELLED", "Cancelled"),
    ("FINISHED", "Finished"),
    ("DELETED", "Deleted"),
    ("FAILED", "Failed"),
    ("MUSTHALT", "Musthalt"),
    ("HALTING", "Halting"),
    ("HALTED", "Halted"),
]


def _content_type_move(apps, schema_editor, *, old: str, new: str) -> None:
    ContentType = apps.get_model("contenttypes", "ContentType")
    db = schema_editor.connection.alias
    if ContentType.objects.using(db).filter(app_label=new, model="jobgang").exists():
        return
    ContentType.objects.using(db).filter(app_label=old, model="jobgang").update(app_label=new)


def content_type_to_gangs(apps, schema_editor):
    _content_type_move(apps, schema_editor, old="jobs", new="gangs")


def content_type_to_jobs(apps, schema_editor):
    _content_type_move(apps, schema_editor, old="gangs", new="jobs")


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("accounts", "0005_content_types_from_portal"),
        ("contenttypes", "0002_remove_content_type_name"),
        # The last jobs migration with JobGang in its state.
        ("jobs", "0021_job_runtime_holder"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="JobGang",
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
                        ("uuid", models.UUIDField(default=uuid.uuid4, editable=False, unique=True)),
                        ("name", models.CharField(max_length=200)),
                        ("config", models.JSONField()),
                        ("task_requests", models.JSONField(default=list)),
                        ("attempt", models.PositiveIntegerField(default=1)),
                        ("retry_count", models.PositiveIntegerField(default=0)),
                        ("status", models.CharField(choices=STATUSES, max_length=16)),
                        ("end_reason", models.CharField(blank=True, max_length=1000)),
                        ("cancelled_by_user", models.BooleanField(default=False)),
                        ("attempts", models.JSONField(blank=True, default=list)),
                        ("created", models.DateTimeField()),
                        ("status_updated", models.DateTimeField()),
                        (
                            "copy_of",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="copies",
                                to="gangs.jobgang",
                            ),
                        ),
                        (
                            "owner",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.PROTECT,
                                related_name="job_gangs",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                        (
                            "project",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.PROTECT,
                                related_name="+",
                                to="accounts.project",
                            ),
                        ),
                    ],
                    options={"db_table": "jobs_jobgang", "ordering": ["-created", "-id"]},
                ),
            ],
            database_operations=[],
        ),
        migrations.RunPython(content_type_to_gangs, content_type_to_jobs),
    ]
