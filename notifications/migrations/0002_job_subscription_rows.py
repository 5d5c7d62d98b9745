"""Subscriptions made apart from a job's request (JobSubscription: Tapis' /jobs/subscribe and a
Tapis submit's subscriptions), and what a delivery to one records: the row and the notice it
sent. ``JobDelivery.event`` grows to hold a notice's type (``jobs.JOB_NEW_STATUS.FINISHED``).
Additive: no row changes."""

import django.db.models.deletion
import uuid
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('jobs', '0025_job_container_pid'),
        ('notifications', '0001_jobdelivery_from_jobs'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name='jobdelivery',
            name='notice',
            field=models.JSONField(blank=True, null=True),
        ),
        migrations.AlterField(
            model_name='jobdelivery',
            name='event',
            field=models.CharField(max_length=128),
        ),
        migrations.CreateModel(
            name='JobSubscription',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('uuid', models.UUIDField(default=uuid.uuid4, editable=False, unique=True)),
                ('origin', models.CharField(max_length=16)),
                ('description', models.CharField(blank=True, max_length=2048)),
                ('enabled', models.BooleanField(default=True)),
                ('type_filter', models.CharField(max_length=128)),
                ('targets', models.JSONField()),
                ('ttl_minutes', models.PositiveIntegerField(blank=True, null=True)),
                ('expires_at', models.DateTimeField(blank=True, null=True)),
                ('created', models.DateTimeField()),
                ('updated', models.DateTimeField()),
                ('job', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='app_subscriptions', to='jobs.job')),
                ('owner', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'ordering': ['created', 'id'],
            },
        ),
        migrations.AddField(
            model_name='jobdelivery',
            name='subscription',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='deliveries', to='notifications.jobsubscription'),
        ),
        migrations.AddIndex(
            model_name='jobsubscription',
            index=models.Index(fields=['job', 'origin'], name='job_subscription_by_job'),
        ),
    ]
