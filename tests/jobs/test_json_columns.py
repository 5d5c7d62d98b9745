"""JSON columns read with orjson (core/jsonfield.py) read back exactly what Django's own
JSONField reads, for every kind of value a column can hold, on the configured database."""

import math

import pytest
from django.db import models

from core.jsonfield import JSONField
from jobs.models import Job

pytestmark = pytest.mark.django_db

VALUES = [
    {"a": [1, 2.5, None, True, False], "b": {"c": "é ☃ \u2028"}, "": ""},
    [],
    {},
    "text",
    0,
    -1.25e-7,
    2**70,  # beyond 64 bits: orjson refuses, Django's reading answers
    [{"deep": [[[[{"x": 1}]]]]}],
]


@pytest.mark.parametrize("value", VALUES)
def test_reads_as_django_reads(submit, value):
    job = submit()
    Job.objects.filter(pk=job.pk).update(halt_events=value)
    ours = Job.objects.values_list("halt_events", flat=True).get(pk=job.pk)
    field = Job._meta.get_field("halt_events")
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT halt_events FROM jobs_job WHERE id = %s", [job.pk])
        raw = cursor.fetchone()[0]
    django_reads = models.JSONField.from_db_value(field, raw, None, connection)
    assert ours == django_reads == value
    assert type(ours) is type(value)


def test_nan_stored_by_django_still_reads():
    field = Job._meta.get_field("halt_events")
    assert math.isnan(field.from_db_value("NaN", None, None))
    assert field.from_db_value(None, None, None) is None


def test_migrations_see_djangos_field():
    name, path, args, kwargs = JSONField(default=list).deconstruct()
    assert path == "django.db.models.JSONField"
    assert Job._meta.get_field("request").__class__ is JSONField
