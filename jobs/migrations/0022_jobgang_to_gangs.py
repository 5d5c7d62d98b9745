"""JobGang moved to the ``gangs`` app (gangs.0001_initial), its table ``jobs_jobgang`` kept:
state only. ``Job.gang`` now points at ``gangs.JobGang`` (the same table, the same column and
constraint), and the jobs state forgets the model. No row is read or written."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("jobs", "0021_job_runtime_holder"),
        ("gangs", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="job",
                    name="gang",
                    field=models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="tasks",
                        to="gangs.jobgang",
                    ),
                ),
                migrations.DeleteModel(name="JobGang"),
            ],
            database_operations=[],
        ),
    ]
