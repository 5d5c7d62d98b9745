"""A report's period: ``from``/``to`` dates (both included) or a preset, in the viewer's zone.

Days run from midnight to midnight in the viewer's zone (the portal's one time rule), so a
report of "2026-10-01 to 2026-10-31" for a viewer in Brussels starts at 2026-09-30T22:00Z. The
arithmetic is on wall-clock dates, so a month with a DST change lasts an hour more or less.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, tzinfo

from django.utils import timezone

from core.api_errors import BadRequest

# A period of a year and a leap day at most: a report reads every run overlapping it.
MAX_DAYS = 366
PRESETS = {
    "this-month": "This month",
    "last-month": "Last month",
    "last-30-days": "Last 30 days",
}
DEFAULT_PRESET = "this-month"


@dataclass(frozen=True)
class ReportPeriod:
    first_day: date
    last_day: date  # included
    start: datetime  # the first day's midnight in the zone
    end: datetime  # the midnight after the last day
    zone: tzinfo
    preset: str = ""

    @property
    def days(self) -> int:
        return (self.last_day - self.first_day).days + 1

    def label(self) -> str:
        return f"{self.first_day:%Y-%m-%d} to {self.last_day:%Y-%m-%d}"

    def query(self) -> str:
        """The query string that asks for this period again (links, downloads)."""
        return f"from={self.first_day:%Y-%m-%d}&to={self.last_day:%Y-%m-%d}"


def _midnight(day: date, zone: tzinfo) -> datetime:
    return timezone.make_aware(datetime.combine(day, time.min), zone)


def period_of_days(first: date, last: date, *, zone: tzinfo, preset: str = "") -> ReportPeriod:
    return ReportPeriod(
        first_day=first,
        last_day=last,
        start=_midnight(first, zone),
        end=_midnight(last + timedelta(days=1), zone),
        zone=zone,
        preset=preset,
    )


def month_period(month: str, *, zone: tzinfo) -> ReportPeriod:
    """``YYYY-MM`` as a period; ValueError naming the rule otherwise."""
    try:
        first = datetime.strptime(month, "%Y-%m").date()
    except ValueError:
        raise ValueError(f"month: {month!r} is not a month (YYYY-MM)") from None
    following = (first.replace(day=28) + timedelta(days=4)).replace(day=1)
    return period_of_days(first, following - timedelta(days=1), zone=zone)


def preset_period(preset: str, *, today: date, zone: tzinfo) -> ReportPeriod:
    if preset == "this-month":
        first = today.replace(day=1)
        following = (first.replace(day=28) + timedelta(days=4)).replace(day=1)
        return period_of_days(first, following - timedelta(days=1), zone=zone, preset=preset)
    if preset == "last-month":
        last = today.replace(day=1) - timedelta(days=1)
        return period_of_days(last.replace(day=1), last, zone=zone, preset=preset)
    if preset == "last-30-days":
        return period_of_days(today - timedelta(days=29), today, zone=zone, preset=preset)
    raise BadRequest(
        "invalid period", [f"preset: must be one of {', '.join(PRESETS)} (got {preset!r})"]
    )


def _date(params, name: str, errors: list[str]) -> date | None:
    value = (params.get(name) or "").strip()
    if not value:
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        errors.append(f"{name}: {value[:40]!r} is not a date (YYYY-MM-DD)")
        return None


def period_from_query(params, *, now: datetime, zone: tzinfo) -> ReportPeriod:
    """The period a request asks for: ``from`` and ``to`` (YYYY-MM-DD, both included), or
    ``preset``; this month when it names neither. BadRequest naming each bad parameter."""
    errors: list[str] = []
    first, last = _date(params, "from", errors), _date(params, "to", errors)
    if errors:
        raise BadRequest("invalid period", errors)
    today = timezone.localtime(now, zone).date()
    if first is None and last is None:
        return preset_period(params.get("preset") or DEFAULT_PRESET, today=today, zone=zone)
    if first is None or last is None:
        missing = "from" if first is None else "to"
        raise BadRequest("invalid period", [f"{missing}: required with the other bound"])
    if last < first:
        raise BadRequest("invalid period", [f"to: must not be before from ({first:%Y-%m-%d})"])
    if (last - first).days + 1 > MAX_DAYS:
        raise BadRequest(
            "invalid period",
            [f"to: a period lasts at most {MAX_DAYS} days (this one {(last - first).days + 1})"],
        )
    return period_of_days(first, last, zone=zone)
