"""GPULab's time shape: UTC, milliseconds cut (not rounded), ``Z``."""

from datetime import UTC, datetime, timedelta, timezone

import pytest

from core.timefmt import parse_utc_z, utc_z


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (datetime(2026, 11, 23, 4, 5, 6, 789999, tzinfo=UTC), "2026-11-23T04:05:06.789Z"),
        (datetime(2026, 1, 1, 0, 0, 0, 999, tzinfo=UTC), "2026-01-01T00:00:00.000Z"),
        # another zone is shown in UTC (the day changes)
        (
            datetime(2026, 1, 1, 1, 30, tzinfo=timezone(timedelta(hours=2))),
            "2025-12-31T23:30:00.000Z",
        ),
        (datetime(9999, 12, 31, 23, 59, 59, 1000, tzinfo=UTC), "9999-12-31T23:59:59.001Z"),
    ],
)
def test_utc_z(value, shown):
    assert utc_z(value) == shown
    assert parse_utc_z(shown) == value.replace(microsecond=value.microsecond // 1000 * 1000)


def test_nothing_is_none():
    assert utc_z(None) is None and parse_utc_z("") is None


def test_whole_seconds():
    # Page attributes, messages and the job document's notBefore/notAfter: seconds cut, not rounded.
    moment = datetime(2026, 1, 1, 1, 30, 5, 999999, tzinfo=timezone(timedelta(hours=2)))
    assert utc_z(moment, timespec="seconds") == "2025-12-31T23:30:05Z"
    assert utc_z(None, timespec="seconds") is None
