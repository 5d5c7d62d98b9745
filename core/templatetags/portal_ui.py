"""Small template helpers shared by every page: times, durations, sizes, bars (job state
badges: jobs/templatetags/job_states.py)."""

from datetime import UTC, datetime

from django import template
from django.utils.html import format_html

from core.timefmt import parse_utc_z

register = template.Library()


def _as_datetime(value) -> datetime | None:
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return value
    if isinstance(value, str):
        try:
            return parse_utc_z(value)
        except ValueError:
            return None
    return None


@register.simple_tag
def utctime(value, style: str = "datetime"):
    """``<time>`` in UTC; static/js/portal.js shows it in the viewer's local time.

    ``style``: "datetime" (default), "date", "time" or "relative" ("3 min ago"). Without
    JavaScript the UTC text stays; the title always holds the UTC time.
    """
    moment = _as_datetime(value)
    if moment is None:
        return format_html('<span class="text-body-secondary">{}</span>', "—")
    moment = moment.astimezone(UTC)
    iso = moment.strftime("%Y-%m-%dT%H:%M:%SZ")
    full = moment.strftime("%Y-%m-%d %H:%M:%S UTC")
    if style == "date":
        text = moment.strftime("%Y-%m-%d")
    elif style == "time":
        text = moment.strftime("%H:%M UTC")
    else:
        text = moment.strftime("%Y-%m-%d %H:%M UTC")
    return format_html(
        '<time datetime="{}" title="{}" data-style="{}">{}</time>', iso, full, style, text
    )


@register.filter
def duration(seconds) -> str:
    """1d 2h, 3h 04m, 5m 06s, 7s."""
    if seconds is None or seconds == "":
        return "—"
    seconds = int(seconds)
    if seconds < 0:
        seconds = 0
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d {hours}h" if hours else f"{days}d"
    if hours:
        return f"{hours}h {minutes:02d}m" if minutes else f"{hours}h"
    if minutes:
        return f"{minutes}m {secs:02d}s"
    return f"{secs}s"


@register.filter
def gb_from_mb(mb) -> str:
    if mb is None:
        return "—"
    value = int(mb) / 1024
    return f"{value:.0f}" if value >= 10 or value == int(value) else f"{value:.1f}"


@register.filter
def percent(part, whole) -> int:
    """Integer percentage of part/whole, clamped to 0-100 (0 when whole is 0)."""
    try:
        part, whole = float(part or 0), float(whole or 0)
    except (TypeError, ValueError):
        return 0
    if whole <= 0:
        return 0
    return max(0, min(100, round(100 * part / whole)))
