r"""``request.scheduling``: durations, time window, buckets, reservations (docs/gpulab-format.md,
section 1).

Choices where GPULab is silent or lenient:
- minDuration larger than maxDuration, both given, is refused: GPULab's scheduling guide says
  "don't set minDuration larger than maxDuration (that doesn't make sense)" and documents no
  clamp. When only maxDuration is given and it is shorter than the default minDuration, the
  default is capped instead (the normalised minDuration becomes the maxDuration string): the
  user asked for nothing contradictory, and a job can never run past maxDuration anyway.
- A notAfter already in the past is refused at submit (jobs/submit/checks.py): it needs the
  clock, and this module is pure. So is an interactive job whose notBefore is still to come:
  GPULab's reference says interactive jobs "will either run immediately, or become FAILED",
  and its own all-options example combines ``"interactive": true`` with a notBefore long past
  and a notAfter years ahead, a window that does not stop it from starting now.
- maxSimultaneousJobs' bucketName: GPULab's schema pattern ``^[\w][\w_\-@.]*$`` refuses
  spaces, yet its reference's example is ``"my parameter sweep limit"``. Any printable text
  is accepted (no control characters, no space at either end: "x" and "x " would silently be
  two buckets), at most 200 characters (the stored column).
- notBefore/notAfter are stored as UTC ``YYYY-MM-DDTHH:MM:SSZ``; fractional seconds are
  dropped before notBefore < notAfter is checked, so a normalised document always re-validates.

Durations (``parse_duration``, ``format_duration``, at the end of this module): ``"3 hours"``, ``"1 week"``, ``"90 seconds"``, ``"1.5 days"``.

The grammar is GPULab's (``^([0-9.]+) *([a-zA-Z]+)$``, unit case-insensitive, fractions truncated
to whole seconds), reproduced exactly so that a job file accepted by GPULab is accepted here and
vice versa. Forms GPULab does not know (``1d``, ``2w``, ``3 hr``, ``1h30m``, a bare number,
surrounding spaces) are refused rather than guessed at.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal, InvalidOperation

from core.timefmt import utc_z

from .checks import Errors, check_str, read_bool, read_int, read_list, read_object, read_str

SCHEDULING_FIELDS = (
    "interactive",
    "restartable",
    "allowHaltWithoutSignal",
    "minDuration",
    "maxDuration",
    "notBefore",
    "notAfter",
    "maxSimultaneousJobs",
    "reservationIds",
)
SCHEDULING_ALIASES = {"killableAfter": "minDuration", "reservationId": "reservationIds"}

MIN_MAX_DURATION_SECONDS = 60
BUCKET_NAME_RE = re.compile(r"\S(?:[^\x00-\x1f\x7f]*\S)?")
BUCKET_NAME_MAX = 200
UUID_RE = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
# RFC 3339 date-time; its section 5.6 note allows a space (or "t") instead of "T".
# [0-9], not \d: \d also matches other scripts' digits, which int() would happily read.
RFC3339_RE = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt ]([0-9]{2}):([0-9]{2}):([0-9]{2})(\.[0-9]+)?"
    r"(?:([Zz])|([+-])([0-9]{2}):([0-9]{2}))"
)
RFC3339_HINT = 'must be an RFC 3339 date-time with a timezone, like "2030-01-01T00:00:00+01:00"'


def normalize_scheduling(
    value: object, path: str, errs: Errors, *, min_default: str, max_default: str
) -> dict | None:
    """Validate request.scheduling (absent = all defaults) and return it with every key present."""
    f = read_object(
        {} if value is None else value,
        path,
        errs,
        fields=SCHEDULING_FIELDS,
        aliases=SCHEDULING_ALIASES,
    )
    if f is None:
        return None
    interactive = read_bool(f, "interactive", errs)
    min_duration, min_seconds = _duration(f, "minDuration", errs, min_default)
    max_duration, max_seconds = _duration(f, "maxDuration", errs, max_default)
    if max_seconds is not None and max_seconds < MIN_MAX_DURATION_SECONDS:
        errs.add(f.path_of("maxDuration"), "must be at least 1 minute")
    elif min_seconds is not None and max_seconds is not None and min_seconds > max_seconds:
        if f.has("minDuration") and f.has("maxDuration"):
            errs.add(
                f.path_of("minDuration"),
                f"must not be longer than maxDuration ({min_duration} > {max_duration})",
            )
        else:
            min_duration = max_duration  # see the module docstring

    not_before = _time(f, "notBefore", errs)
    not_after = _time(f, "notAfter", errs)
    # interactive with a window: judged at submit against the clock (see the module docstring).
    if not_before is not None and not_after is not None and not_before >= not_after:
        errs.add(f.path_of("notAfter"), "must be later than notBefore")

    return {
        "interactive": interactive,
        "restartable": read_bool(f, "restartable", errs),
        "allowHaltWithoutSignal": read_bool(f, "allowHaltWithoutSignal", errs),
        "minDuration": min_duration,
        "maxDuration": max_duration,
        "notBefore": _utc_text(not_before),
        "notAfter": _utc_text(not_after),
        "maxSimultaneousJobs": _bucket(
            f.get("maxSimultaneousJobs"), f.path_of("maxSimultaneousJobs"), errs
        ),
        "reservationIds": read_list(f, "reservationIds", errs, _reservation_id, bare_ok=True),
    }


def _duration(f, name: str, errs: Errors, default: str) -> tuple[str | None, int | None]:
    """(the duration string as given, or the default; its seconds) or (None, None) on error."""
    value = f.get(name)
    text = default if value is None else value
    try:
        return text, parse_duration(text)
    except ValueError as exc:
        errs.add(f.path_of(name), str(exc))
        return None, None


def parse_rfc3339(text: str) -> datetime | None:
    """An aware datetime in UTC, truncated to whole seconds, or None when ``text`` is not a valid
    RFC 3339 date-time with a timezone."""
    match = RFC3339_RE.fullmatch(text)
    if match is None:
        return None
    year, month, day, hour, minute, second, _fraction, zulu, sign, off_h, off_m = match.groups()
    try:
        if zulu:
            tz = UTC
        else:
            offset = timedelta(hours=int(off_h), minutes=int(off_m))
            if offset >= timedelta(hours=24) or int(off_m) > 59:
                return None
            tz = timezone(-offset if sign == "-" else offset)
        moment = datetime(
            int(year), int(month), int(day), int(hour), int(minute), int(second), tzinfo=tz
        )
        return moment.astimezone(UTC)
    except (ValueError, OverflowError):
        return None


def _time(f, name: str, errs: Errors) -> datetime | None:
    value = f.get(name)
    if value is None:
        return None
    text = check_str(value, f.path_of(name), errs, max_length=64)
    if text is None:
        return None
    moment = parse_rfc3339(text)
    if moment is None:
        errs.add(f.path_of(name), RFC3339_HINT)
    return moment


def _utc_text(moment: datetime | None) -> str | None:
    return utc_z(moment, timespec="seconds")


def _bucket(value: object, path: str, errs: Errors) -> dict | None:
    if value is None:
        return None
    f = read_object(value, path, errs, fields=("bucketName", "bucketMax"))
    if f is None:
        return None
    name = read_str(
        f,
        "bucketName",
        errs,
        required=True,
        max_length=BUCKET_NAME_MAX,
        pattern=BUCKET_NAME_RE,
        pattern_message="must be printable text, without control characters or a space at "
        "either end",
    )
    bucket_max = read_int(f, "bucketMax", errs, required=True, above=0)
    if name is None or bucket_max is None:
        return None
    return {"bucketName": name, "bucketMax": bucket_max}


def _reservation_id(item: object, path: str, errs: Errors) -> str | None:
    text = check_str(item, path, errs, pattern=UUID_RE, pattern_message="must be a UUID")
    return None if text is None else text.lower()


# --- durations --------------------------------------------------------------------------------

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
