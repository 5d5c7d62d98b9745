"""GPULab's duration grammar: ^([0-9.]+) *([a-zA-Z]+)$, whole seconds, a fixed set of units."""

import pytest

from jobs.spec import format_duration, parse_duration
from jobs.spec.v2_scheduling import MAX_SECONDS, is_duration

HOUR, DAY, WEEK = 3600, 86400, 604800


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("1 week", WEEK),
        ("2 weeks", 2 * WEEK),
        ("1 day", DAY),
        ("2 days", 2 * DAY),
        ("3 hour", 3 * HOUR),
        ("3 hours", 3 * HOUR),
        ("1 h", HOUR),
        ("5 minutes", 300),
        ("1 minute", 60),
        ("1 mins", 60),
        ("10 min", 600),
        ("10 m", 600),
        ("90 seconds", 90),
        ("1 second", 1),
        ("2 secs", 2),
        ("1 sec", 1),
        ("7 s", 7),
        ("0 seconds", 0),
        # the unit is case-insensitive ("M" is minutes: there are no months)
        ("3 HOURS", 3 * HOUR),
        ("1 Week", WEEK),
        ("5 M", 300),
        # the space is optional and may be repeated
        ("3hours", 3 * HOUR),
        ("3   hours", 3 * HOUR),
        ("30s", 30),
        # fractions are truncated to whole seconds, exactly (no float rounding)
        ("1.5 hours", 5400),
        (".5 hours", 1800),
        ("5. minutes", 300),
        ("4.35 minutes", 261),
        ("0.5 s", 0),
        ("1.9999 seconds", 1),
        ("0.1 hours", 360),
        ("007 days", 7 * DAY),
    ],
)
def test_accepted(text, seconds):
    assert parse_duration(text) == seconds
    assert is_duration(text)


@pytest.mark.parametrize(
    "text",
    [
        "1d",  # GPULab knows day/days only
        "2w",
        "2 wk",
        "3 hr",
        "3 hrs",
        "1 month",
        "2 months",
        "1 year",
        "1h30m",  # no compounds
        "1 hour 30 minutes",
        "60",  # a bare number
        "hours",  # a bare unit
        " 1 hour",  # surrounding spaces
        "1 hour ",
        "1 hour\n",
        "1.2.3 hours",
        ".",
        ". hours",
        "1,5 hours",
        "-1 hour",
        "+1 hour",
        "1e3 seconds",
        "1 weeks2",
        "",
    ],
)
def test_rejected(text):
    with pytest.raises(ValueError, match="must be a duration like"):
        parse_duration(text)
    assert not is_duration(text)


@pytest.mark.parametrize("value", [3600, 1.5, None, ["1 hour"]])
def test_rejects_non_strings(value):
    with pytest.raises(ValueError, match="must be a duration like"):
        parse_duration(value)


def test_message_names_the_unknown_unit():
    with pytest.raises(ValueError, match='unknown unit "hr"'):
        parse_duration("3 hr")


def test_message_quotes_the_bad_text():
    with pytest.raises(ValueError, match='not "1h30m"'):
        parse_duration("1h30m")


def test_absurdly_long_durations_are_refused():
    assert parse_duration("5200 weeks") <= MAX_SECONDS
    with pytest.raises(ValueError, match="too long"):
        parse_duration("5300 weeks")
    with pytest.raises(ValueError, match="too long"):
        parse_duration("9" * 5000 + " weeks")


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (2 * WEEK, "2 weeks"),
        (WEEK, "1 week"),
        (8 * DAY, "8 days"),
        (DAY, "1 day"),
        (26 * HOUR, "26 hours"),
        (7 * HOUR, "7 hours"),
        (HOUR, "1 hour"),
        (180, "3 minutes"),
        (60, "1 minute"),
        (90, "90 seconds"),
        (3601, "3601 seconds"),
        (1, "1 second"),
        (0, "0 seconds"),
    ],
)
def test_format_duration(seconds, text):
    assert format_duration(seconds) == text
    assert parse_duration(text) == seconds


def test_format_duration_round_trips():
    for seconds in [*range(0, 200_000, 97), *range(0, 10 * WEEK, 3600), 14 * DAY - 1]:
        assert parse_duration(format_duration(seconds)) == seconds


@pytest.mark.parametrize("value", [-1, 1.5, True, "60"])
def test_format_duration_rejects_bad_input(value):
    with pytest.raises((ValueError, TypeError)):
        format_duration(value)
