"""Small template helpers shared by every page: times, durations, sizes, bars (job state
badges: jobs/templatetags/job_states.py)."""

import re
from datetime import UTC, date, datetime
from typing import Any

from django import template
from django.utils import timezone
from django.utils.html import conditional_escape, format_html
from django.utils.safestring import SafeString, mark_safe

from core.timefmt import parse_utc_z, utc_z

register = template.Library()


def _as_datetime(value: object) -> datetime | None:
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


def zone_label(moment: datetime) -> str:
    """The zone's abbreviation (``CET``, ``UTC``; ``+03`` where the zone has none)."""
    return moment.strftime("%Z") or moment.strftime("%z")


def relative_text(moment: datetime, now: datetime) -> str:
    """``in 3 h``, ``12 min ago``, ``a few seconds ago`` (static/js/portal.js says the same)."""
    seconds = round((moment - now).total_seconds())
    size = abs(seconds)
    if size < 45:
        text = "a few seconds"
    elif size < 5400:
        text = f"{round(size / 60)} min"
    elif size < 129600:
        text = f"{round(size / 3600)} h"
    else:
        text = f"{round(size / 86400)} days"
    return f"{text} ago" if seconds <= 0 else f"in {text}"


@register.simple_tag
def usertime(value: object, style: str = "datetime") -> SafeString:
    """The one way a page shows a time: ``<time>`` in the viewer's zone (the one activated by
    accounts.timezones), labelled, 24-hour ISO style: ``2026-11-22 14:05 CET``.

    ``style``: "datetime" (default), "seconds" (``2026-11-22 14:05:09 CET``: for events close
    together), "date", "time" (``14:05 CET``) or "relative" (``in 3 h``,
    ``12 min ago``; static/js/portal.js keeps it current). The title always holds the absolute
    time with seconds and zone (shown on hover); ``datetime`` is UTC for scripts.
    """
    moment = _as_datetime(value)
    if moment is None:
        return format_html('<span class="text-body-secondary">{}</span>', "—")
    local = moment.astimezone(timezone.get_current_timezone())
    label = zone_label(local)
    iso = utc_z(moment, timespec="seconds")
    full = local.strftime("%Y-%m-%d %H:%M:%S ") + label
    if style == "date":
        text = local.strftime("%Y-%m-%d")
    elif style == "seconds":
        text = full
    elif style == "time":
        text = local.strftime("%H:%M ") + label
    elif style == "relative":
        text = relative_text(moment, timezone.now())
    else:
        text = local.strftime("%Y-%m-%d %H:%M ") + label
    return format_html(
        '<time datetime="{}" title="{}" data-style="{}">{}</time>', iso, full, style, text
    )


@register.filter
def iso_utc(value: object) -> str:
    """``2026-11-22T13:05:00Z`` for scripts (data attributes), "" for no time."""
    moment = _as_datetime(value)
    return utc_z(moment, timespec="seconds") if moment else ""


# The older name: templates written before the time rule follow it too.
utctime = register.simple_tag(usertime, name="utctime")

# Times in the scheduler's explanations (jobs.scheduler.timing.short_utc): "14:00 UTC" (today)
# or "2026-12-01 14:00 UTC".
_EXPLANATION_TIME = re.compile(r"(?:(\d{4}-\d{2}-\d{2}) )?(\d{2}):(\d{2}) UTC")


@register.filter
def zoned_explanation(text: object) -> str:
    """An explanation with its UTC times shown in the viewer's zone (same rule as usertime)."""
    text = str(text)  # a lazy translation or a SafeString too
    zone = timezone.get_current_timezone()
    today = timezone.now().astimezone(UTC).date()
    parts, last = [], 0
    for match in _EXPLANATION_TIME.finditer(text):
        day = date.fromisoformat(match[1]) if match[1] else today
        moment = datetime(day.year, day.month, day.day, int(match[2]), int(match[3]), tzinfo=UTC)
        local = moment.astimezone(zone)
        shown = local.strftime(
            "%H:%M " if local.date() == timezone.localdate() else "%Y-%m-%d %H:%M "
        )
        parts.append(conditional_escape(text[last : match.start()]))
        parts.append(
            format_html(
                '<time datetime="{}" title="{}">{}</time>',
                utc_z(moment, timespec="seconds"),
                local.strftime("%Y-%m-%d %H:%M:%S ") + zone_label(local),
                shown + zone_label(local),
            )
        )
        last = match.end()
    parts.append(conditional_escape(text[last:]))
    return mark_safe("".join(str(p) for p in parts))  # every part escaped or format_html'd


@register.filter
def duration(seconds: int | float | str | None) -> str:
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
def gb_from_mb(mb: int | float | str | None) -> str:
    if mb is None:
        return "—"
    value = int(mb) / 1024
    return f"{value:.0f}" if value >= 10 or value == int(value) else f"{value:.1f}"


@register.filter
def percent(part: Any, whole: Any) -> int:
    """Integer percentage of part/whole, clamped to 0-100 (0 when whole is 0)."""
    try:
        share, total = float(part or 0), float(whole or 0)
    except (TypeError, ValueError):
        return 0
    if total <= 0:
        return 0
    return max(0, min(100, round(100 * share / total)))
