"""JobDelivery moved to the ``notifications`` app (notifications.0001_jobdelivery_from_jobs), its
table ``jobs_jobdelivery`` kept: the jobs state forgets the model. No row is read or written."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("jobs", "0022_jobgang_to_gangs"),
        ("notifications", "0001_jobdelivery_from_jobs"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name="JobDelivery")],
            database_operations=[],
        ),
    ]
