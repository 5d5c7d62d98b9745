# A job has one row per web port opened through the portal (interactive/web_ports.py); a
# session's job still has one.

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('interactive', '0002_seed_templates'),
    ]

    operations = [
        migrations.AlterField(
            model_name='interactivesession',
            name='job',
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='interactive_sessions', to='jobs.job'),
        ),
        migrations.AddConstraint(
            model_name='interactivesession',
            constraint=models.UniqueConstraint(fields=('job', 'port'), name='interactive_session_job_port'),
        ),
    ]
