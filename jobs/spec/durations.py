"""GPULab duration strings: ``"3 hours"``, ``"1 week"``, ``"90 seconds"``, ``"1.5 days"``.

The grammar is GPULab's (``^([0-9.]+) *([a-zA-Z]+)$``, unit case-insensitive, fractions truncated
to whole seconds), reproduced exactly so that a job file accepted by GPULab is accepted here and
vice versa. Forms GPULab does not know (``1d``, ``2w``, ``3 hr``, ``1h30m``, a bare number,
surrounding spaces) are refused rather than guessed at.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

DURATION_RE = re.compile(r"([0-9.]+) *([a-zA-Z]+)")

MINUTE = 60
HOUR = 60 * MINUTE
DAY = 24 * HOUR
WEEK = 7 * DAY

UNIT_SECONDS: dict[str, int] = {
    **dict.fromkeys(("s", "sec", "secs", "second", "seconds"), 1),
    **dict.fromkeys(("m", "min", "mins", "minute", "minutes"), MINUTE),
    **dict.fromkeys(("h", "hour", "hours"), HOUR),
    **dict.fromkeys(("day", "days"), DAY),
    **dict.fromkeys(("week", "weeks"), WEEK),
}

# Not in GPULab: durations end up in datetime arithmetic (timedelta overflows near 2.7 million
# years) and in database columns, so an absurd "99999999999 weeks" is refused here, once.
MAX_SECONDS = 100 * 365 * DAY

DURATION_HINT = (
    'must be a duration like "3 hours" '
    "(units: s, sec, secs, second, seconds, m, min, mins, minute, minutes, "
    "h, hour, hours, day, days, week, weeks)"
)


def parse_duration(text: object) -> int:
    """Return the whole number of seconds in a duration string such as ``"1.5 hours"``.

    Raises ValueError whose message starts with DURATION_HINT (so it reads well after a field
    path) and says what was wrong with ``text``.
    """
    if not isinstance(text, str):
        raise ValueError(f"{DURATION_HINT}, not a {type(text).__name__}")
    # fullmatch, not match with "$": "$" would also accept a trailing newline.
    match = DURATION_RE.fullmatch(text)
    if match is None:
        raise ValueError(f'{DURATION_HINT}, not "{text}"')
    number_text, unit_text = match.groups()
    unit = UNIT_SECONDS.get(unit_text.lower())
    if unit is None:
        raise ValueError(f'{DURATION_HINT}; unknown unit "{unit_text}"')
    try:
        # Decimal, not float: "4.35 minutes" must be 261 seconds, not 260.99999999999997 -> 260.
        number = Decimal(number_text)
    except InvalidOperation:
        raise ValueError(f'{DURATION_HINT}; "{number_text}" is not a number') from None
    total = number * unit
    # Compared before int(): a thousand-digit number must not become a thousand-digit int.
    if total > MAX_SECONDS:
        raise ValueError(f'is too long: "{text}" is more than 100 years')
    return int(total)  # int() truncates toward zero, as GPULab does


def is_duration(text: object) -> bool:
    """True when ``text`` parses with parse_duration."""
    try:
        parse_duration(text)
    except ValueError:
        return False
    return True


_FORMAT_UNITS = (("week", WEEK), ("day", DAY), ("hour", HOUR), ("minute", MINUTE))


def format_duration(seconds: int) -> str:
    """Write ``seconds`` in the largest unit that divides it exactly: 7200 -> "2 hours".

    The result always parses back to the same value. Used, for example, for the reduced
    maxDuration of a restarted job ("8 hours" minus 1 hour -> "7 hours").
    """
    if isinstance(seconds, bool) or not isinstance(seconds, int):
        raise TypeError(f"format_duration expects an int, not {type(seconds).__name__}")
    if seconds < 0:
        raise ValueError("a duration cannot be negative")
    for name, size in _FORMAT_UNITS:
        if seconds and seconds % size == 0:
            count = seconds // size
            return f"{count} {name}" if count == 1 else f"{count} {name}s"
    return "1 second" if seconds == 1 else f"{seconds} seconds"
