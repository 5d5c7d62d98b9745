"""API tokens stored hashed; the plain keys of DRF's authtoken move over and are dropped.

Earlier versions kept every API key in clear in ``authtoken_token`` (rest_framework.authtoken).
This migration hashes each of them into ``ApiToken`` (so scripts keep working with the same key),
then drops that table and forgets authtoken's migrations, so no plain key remains and the app can
leave INSTALLED_APPS. The table is read with plain SQL because the app is no longer installed;
a database that never had it (a fresh install) skips the copy. Not reversible: the keys are gone.
"""

import hashlib
from datetime import UTC, datetime

import django.db.models.deletion
from django.apps import apps as global_apps
from django.conf import settings
from django.db import migrations, models

OLD_TABLE = "authtoken_token"


def _aware(value) -> datetime:
    # SQLite hands back naive UTC datetimes (or text) to a raw cursor; PostgreSQL aware ones.
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def copy_authtoken_keys(apps, schema_editor):
    connection = schema_editor.connection
    with connection.cursor() as cursor:
        if OLD_TABLE not in connection.introspection.table_names(cursor):
            return
        table = schema_editor.quote_name(OLD_TABLE)
        cursor.execute(f"SELECT {schema_editor.quote_name('key')}, created, user_id FROM {table}")
        rows = cursor.fetchall()
    ApiToken = apps.get_model("accounts", "ApiToken")
    ApiToken.objects.bulk_create(
        ApiToken(
            user_id=user_id,
            name="migrated",
            prefix=key[:8],
            digest=hashlib.sha256(key.encode()).hexdigest(),
            created=_aware(created),
        )
        for key, created, user_id in rows
    )
    if global_apps.is_installed("rest_framework.authtoken"):
        # Someone put the app back: leave its table, but without any usable key in it.
        with connection.cursor() as cursor:
            cursor.execute(f"DELETE FROM {table}")
        return
    schema_editor.execute(f"DROP TABLE {table}")
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM django_migrations WHERE app = %s", ["authtoken"])


class Migration(migrations.Migration):
    # Moved from the portal app (issue #11): a database whose portal migration is applied
    # counts this one as applied too, and the table keeps its name (Meta.db_table).
    replaces = [('portal', '0003_apitoken_hashed')]

    dependencies = [
        ('accounts', '0002_logincertificate'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='ApiToken',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('name', models.CharField(blank=True, default='', max_length=100)),
                ('prefix', models.CharField(help_text='First characters of the key.', max_length=8)),
                ('digest', models.CharField(help_text='SHA-256 of the key, hex.', max_length=64, unique=True)),
                ('created', models.DateTimeField()),
                ('last_used', models.DateTimeField(blank=True, null=True)),
                ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='api_tokens', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'db_table': 'portal_apitoken',
                'verbose_name': 'API token',
                'ordering': ['-created', '-id'],
            },
        ),
        migrations.RunPython(copy_authtoken_keys, migrations.RunPython.noop),
    ]
