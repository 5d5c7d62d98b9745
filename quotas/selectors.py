"""The limits in force: a scope's own row, else the site's defaults (``PORTAL_QUOTA_DEFAULTS``).

``PORTAL_QUOTA_DEFAULTS`` is ``{"project": {...}, "user": {...}}`` with any of the limit fields
of :data:`quotas.models.LIMIT_FIELDS` (``gpus_hard``, ``gpu_hours_hard``, ...): the limits of a
project or a user that has no row of its own, so a new project or user gets them at once. A
user within a project has limits only through a row.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from django.conf import settings
from django.db.models import Q

from quotas.models import LIMIT_FIELDS, Quota

SCOPES = ("project", "user", "member")


@dataclass(frozen=True)
class LimitsInForce:
    """One scope's limits: ``scope`` project/user/member, names, the limit fields set."""

    scope: str
    project: str = ""
    user: str = ""
    limits: dict[str, float | int] = field(default_factory=dict)
    from_default: bool = False


def quota_defaults() -> dict[str, dict[str, float | int]]:
    """The site's defaults, checked (``manage.py check`` reports a bad one: quotas/checks.py)."""
    raw = getattr(settings, "PORTAL_QUOTA_DEFAULTS", None) or {}
    found: dict[str, dict[str, float | int]] = {}
    for scope in ("project", "user"):
        values = raw.get(scope) or {}
        found[scope] = {k: v for k, v in values.items() if k in LIMIT_FIELDS and v is not None}
    return found


def defaults_problems() -> list[str]:
    raw = getattr(settings, "PORTAL_QUOTA_DEFAULTS", None) or {}
    problems = []
    if not isinstance(raw, dict):
        return ["PORTAL_QUOTA_DEFAULTS must be an object"]
    for scope, values in raw.items():
        if scope not in ("project", "user"):
            problems.append(f"PORTAL_QUOTA_DEFAULTS.{scope}: only project and user have defaults")
            continue
        for key, value in (values or {}).items():
            if key not in LIMIT_FIELDS:
                problems.append(f"PORTAL_QUOTA_DEFAULTS.{scope}.{key}: not a limit")
            elif value is not None and (not isinstance(value, int | float) or value < 0):
                problems.append(f"PORTAL_QUOTA_DEFAULTS.{scope}.{key}: must be a number >= 0")
    return problems


def _set(row: Quota) -> dict[str, float | int]:
    return {name: getattr(row, name) for name in LIMIT_FIELDS if getattr(row, name) is not None}


def quotas_in_force(
    *, projects: Iterable[str] = (), users: Iterable[str] = (), everyone: bool = False
) -> list[LimitsInForce]:
    """The limits of these projects and users (and of those users within any project), rows
    first, defaults for the named projects and users without a row. ``everyone``: every row
    (the site's defaults then apply only to the names given)."""
    projects, users = set(projects), set(users)
    rows = Quota.objects.select_related("project", "user")
    if not everyone:
        rows = rows.filter(Q(project__name__in=projects) | Q(user__username__in=users))
    found: list[LimitsInForce] = []
    seen: set[tuple[str, str]] = set()
    for row in rows:
        project = row.project.name if row.project else ""
        user = row.user.username if row.user else ""
        if row.scope == "member" and not everyone and user not in users:
            continue
        found.append(LimitsInForce(row.scope, project, user, _set(row)))
        if row.scope != "member":
            seen.add((row.scope, project or user))
    defaults = quota_defaults()
    for scope, names in (("project", projects), ("user", users)):
        if not defaults[scope]:
            continue
        for name in sorted(names):
            if (scope, name) not in seen:
                found.append(
                    LimitsInForce(
                        scope,
                        name if scope == "project" else "",
                        name if scope == "user" else "",
                        dict(defaults[scope]),
                        from_default=True,
                    )
                )
    return [q for q in found if q.limits]


def month_start(now: datetime) -> datetime:
    """The first moment of ``now``'s calendar month (UTC): when hour budgets began."""
    moment = now.astimezone(UTC)
    return moment.replace(day=1, hour=0, minute=0, second=0, microsecond=0)


def month_end(now: datetime) -> datetime:
    """The first moment of the next month (UTC): when hour budgets renew."""
    start = month_start(now)
    if start.month == 12:
        return start.replace(year=start.year + 1, month=1)
    return start.replace(month=start.month + 1)
