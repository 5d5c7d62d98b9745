from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("jobs", "0024_estimate_range_ended_runs"),
    ]

    operations = [
        migrations.AddField(
            model_name="job",
            name="container_pid",
            field=models.PositiveIntegerField(blank=True, null=True),
        ),
    ]
