"""The API's orjson renderer writes exactly what DRF's JSONRenderer writes."""

import datetime
import decimal
import uuid

from django.utils import timezone
from rest_framework.renderers import JSONRenderer

from core.api.renderers import PortalJSONRenderer

VALUES = {
    "text": 'héllo \u2028 line \u2029 para "quoted" \\ <tag>',
    "uuid": uuid.UUID("12345678-1234-5678-1234-567812345678"),
    "aware": timezone.make_aware(datetime.datetime(2026, 1, 2, 3, 4, 5, 678901), datetime.UTC),
    "naive": datetime.datetime(2026, 1, 2, 3, 4, 5),
    "date": datetime.date(2026, 1, 2),
    "decimal": decimal.Decimal("1.50"),
    "nested": {"list": [1, 2.5, None, True, False, [], {}], 1: "int key"},
    "big": 2**70,  # beyond orjson: DRF writes it
    "tuple": (1, 2),
}


def test_same_bytes_as_drf_for_every_kind_of_value():
    for key, value in VALUES.items():
        data = {key: value}
        assert PortalJSONRenderer().render(data) == JSONRenderer().render(data), key
    assert PortalJSONRenderer().render(VALUES) == JSONRenderer().render(VALUES)


def test_indentation_asked_for_is_honoured():
    media = "application/json; indent=2"
    data = {"a": [1, {"b": 2}]}
    assert PortalJSONRenderer().render(data, media) == JSONRenderer().render(data, media)
    assert b"\n  " in PortalJSONRenderer().render(data, media)


def test_nothing_renders_as_empty():
    assert PortalJSONRenderer().render(None) == b""
