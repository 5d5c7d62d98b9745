"""JobGang.started_attempt: the last attempt whose tasks were started together (issue 27 item 3:
every container created before any starts). Existing gangs count as started: their tasks were
launched one by one already."""

from django.db import migrations, models
from django.db.models import F


def started_as_before(apps, schema_editor):
    apps.get_model("gangs", "JobGang").objects.update(started_attempt=F("attempt"))


class Migration(migrations.Migration):
    dependencies = [("gangs", "0001_initial")]

    operations = [
        migrations.AddField(
            model_name="jobgang",
            name="started_attempt",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.RunPython(started_as_before, migrations.RunPython.noop),
    ]
