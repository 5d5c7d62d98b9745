from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("jobs", "0026_job_array_id"),
    ]

    operations = [
        migrations.AddField(
            model_name="job",
            name="borrowed",
            field=models.BooleanField(default=False),
        ),
    ]
