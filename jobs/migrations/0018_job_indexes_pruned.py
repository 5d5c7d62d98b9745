"""Drop two job indexes nothing reads: ``created`` alone (``job_list_order`` on created, id
serves every order and range on created) and ``bucket_name`` (bucket counts read the jobs that
hold resources through the status index). Each index is one more write for every submitted job
and one more path the PostgreSQL planner costs for every list page.

Dropped by name rather than by ``AlterField``, which on SQLite copies the whole jobs table
(twice) to change an index."""

from django.db import migrations, models

# The names Django gave them (the same on both databases; the ``_like`` one is PostgreSQL's
# pattern index of a varchar column).
CREATED = "jobs_job_created_6711f264"
BUCKET = "jobs_job_bucket_name_561fa0c9"


def drop(apps, schema_editor):
    for name in (CREATED, BUCKET, BUCKET + "_like"):
        schema_editor.execute(f"DROP INDEX IF EXISTS {schema_editor.quote_name(name)}")


def recreate(apps, schema_editor):
    qn = schema_editor.quote_name
    schema_editor.execute(f"CREATE INDEX {qn(CREATED)} ON {qn('jobs_job')} ({qn('created')})")
    schema_editor.execute(f"CREATE INDEX {qn(BUCKET)} ON {qn('jobs_job')} ({qn('bucket_name')})")
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(
            f"CREATE INDEX {qn(BUCKET + '_like')} ON {qn('jobs_job')} "
            f"({qn('bucket_name')} varchar_pattern_ops)"
        )


class Migration(migrations.Migration):
    dependencies = [
        ("jobs", "0017_job_state_counts"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="job",
                    name="bucket_name",
                    field=models.CharField(blank=True, max_length=200),
                ),
                migrations.AlterField(
                    model_name="job",
                    name="created",
                    field=models.DateTimeField(),
                ),
            ],
            database_operations=[migrations.RunPython(drop, recreate)],
        ),
    ]
