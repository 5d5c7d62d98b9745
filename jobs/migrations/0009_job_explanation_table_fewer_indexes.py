"""Queued explanations move to their own narrow table (JobExplanation), and jobs_job loses the
indexes that its composite indexes already cover (status; owner, project and slave, each the
leading column of an (x, status) index). Both cut what the scheduler's tick writes per row.
Existing explanations are copied over; going back copies them back."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


def copy_to_table(apps, schema_editor):
    Job = apps.get_model("jobs", "Job")
    JobExplanation = apps.get_model("jobs", "JobExplanation")
    rows = Job.objects.values_list("pk", "queued_explanations")
    JobExplanation.objects.bulk_create(
        [JobExplanation(job_id=pk, lines=lines) for pk, lines in rows.iterator() if lines],
        batch_size=1000,
    )


def copy_to_column(apps, schema_editor):
    Job = apps.get_model("jobs", "Job")
    JobExplanation = apps.get_model("jobs", "JobExplanation")
    for pk, lines in JobExplanation.objects.values_list("job_id", "lines").iterator():
        Job.objects.filter(pk=pk).update(queued_explanations=lines)


class Migration(migrations.Migration):
    dependencies = [
        ("clusters", "0002_cluster_id_min_1"),
        ("jobs", "0008_job_openpai_config"),
        ("accounts", "0002_logincertificate"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="JobExplanation",
            fields=[
                (
                    "job",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        primary_key=True,
                        related_name="explanation",
                        serialize=False,
                        to="jobs.job",
                    ),
                ),
                ("lines", models.JSONField(default=list)),
            ],
        ),
        migrations.RunPython(copy_to_table, copy_to_column),
        migrations.RemoveField(
            model_name="job",
            name="queued_explanations",
        ),
        migrations.AlterField(
            model_name="job",
            name="owner",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="jobs",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
        migrations.AlterField(
            model_name="job",
            name="project",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="jobs",
                to="accounts.project",
            ),
        ),
        migrations.AlterField(
            model_name="job",
            name="slave",
            field=models.ForeignKey(
                blank=True,
                db_index=False,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="jobs",
                to="clusters.slave",
            ),
        ),
        migrations.AlterField(
            model_name="job",
            name="status",
            field=models.CharField(
                choices=[
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
                ],
                max_length=16,
            ),
        ),
    ]
