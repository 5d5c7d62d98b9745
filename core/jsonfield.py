"""``JSONField``: Django's JSON column, read with orjson.

A 50-job list page reads 350 JSON values and a scheduler tick tens of thousands; the standard
library's decoder was a tenth of a list page's CPU. Reading is all that changes: values are
written by Django's own JSONField code, and anything orjson refuses to read (NaN, integers
beyond 64 bits, text that is not JSON) goes through Django's reading, so every stored value
reads as it did. ``deconstruct`` names Django's field, so migrations see no change.
"""

from __future__ import annotations

import re

import orjson
from django.db import models
from django.db.models.fields.json import KeyTransform

# orjson reads an integer beyond 64 bits as a float where Python's json keeps it an int: text
# with such a long run of digits goes to Django's reading.
_LONG_NUMBER = re.compile(r"\d{19}")


class JSONField(models.JSONField):
    def from_db_value(self, value, expression, connection):
        if value is None or self.decoder is not None:
            return super().from_db_value(value, expression, connection)
        if not isinstance(value, str):
            if isinstance(expression, KeyTransform):
                return value  # SQLite extracts non-text values as SQL values (as Django's field)
            return super().from_db_value(value, expression, connection)
        if _LONG_NUMBER.search(value):
            return super().from_db_value(value, expression, connection)
        try:
            return orjson.loads(value)
        except (orjson.JSONDecodeError, TypeError):
            return super().from_db_value(value, expression, connection)

    def deconstruct(self):
        name, _path, args, kwargs = super().deconstruct()
        return name, "django.db.models.JSONField", args, kwargs
