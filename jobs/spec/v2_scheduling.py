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
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone

from core.timefmt import utc_z

from .checks import Errors, check_str, read_bool, read_int, read_list, read_object, read_str
from .durations import parse_duration

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
