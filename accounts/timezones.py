"""The one time rule of the pages: every time is shown in the viewer's zone, labelled.

A user's zone is ``Profile.time_zone`` (an IANA name such as ``Europe/Brussels``). Until it is
set, static/js/portal.js detects the browser's zone once and saves it through
``profile_set_time_zone``; meanwhile times are shown in UTC (labelled ``UTC``).
``UserTimeZoneMiddleware`` activates the zone for each request, so Django's own rendering (the
admin, form fields of ``DateTimeField``) follows the same rule as the ``{% usertime %}`` tag.
"""

from __future__ import annotations

from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from django.utils import timezone

from accounts.models import Profile

UTC_NAME = "UTC"


@lru_cache(maxsize=1)
def zone_names() -> tuple[str, ...]:
    """Every IANA zone name the server knows, sorted (the profile's choices)."""
    return tuple(sorted(available_timezones() | {UTC_NAME}))


def zone_or_none(name: str | None) -> ZoneInfo | None:
    if not name or name not in zone_names():
        return None
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return None


def zone_name_of(user) -> str:
    """The user's saved zone name, or "" when none is saved yet."""
    if user is None or not user.is_authenticated:
        return ""
    # The related profile is cached on the user object for the rest of the request.
    try:
        return user.portal_profile.time_zone
    except Profile.DoesNotExist:
        return ""


def profile_set_time_zone(*, user, zone: str) -> str:
    """Save ``zone`` as the user's time zone; ValueError naming the rule when it is unknown."""
    zone = (zone or "").strip()
    if zone_or_none(zone) is None:
        raise ValueError(f"time_zone: unknown time zone {zone!r} (use an IANA name)")
    profile, _ = Profile.objects.get_or_create(user=user)
    profile.time_zone = zone
    profile.save(update_fields=["time_zone"])
    user.portal_profile = profile
    return zone


class UserTimeZoneMiddleware:
    """Activates the signed-in user's zone for the request (UTC while none is saved)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        zone = zone_or_none(zone_name_of(getattr(request, "user", None)))
        if zone is None:
            timezone.deactivate()
        else:
            timezone.activate(zone)
        try:
            return self.get_response(request)
        finally:
            timezone.deactivate()
