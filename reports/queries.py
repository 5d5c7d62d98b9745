"""What one request for a report asks and what the asker may see: the period and grouping read
from the query string (every bad parameter named), and the report over the runs the asker's
visibility allows (reports/visibility.py). Pages, downloads and the API all go through here."""

from __future__ import annotations

from datetime import UTC, datetime, tzinfo

from accounts.timezones import zone_name_of, zone_or_none
from core.api_errors import BadRequest
from reports.accounting import BY_CHOICES, UsageReport, sizes_report, usage_report
from reports.periods import ReportPeriod, period_from_query
from reports.visibility import report_runs_scope, report_viewer_of


def viewer_zone(user) -> tzinfo:
    """The viewer's saved zone (UTC while none is saved), as the pages show times."""
    return zone_or_none(zone_name_of(user)) or UTC


def report_request(params, *, user, now: datetime) -> tuple[str, ReportPeriod]:
    """``by`` (user, project, member, cluster; default user) and the period of a request."""
    by = (params.get("by") or "user").strip()
    errors = [] if by in BY_CHOICES else [f"by: must be one of {', '.join(BY_CHOICES)}"]
    try:
        period = period_from_query(params, now=now, zone=viewer_zone(user))
    except BadRequest as refused:
        errors += refused.errors
    if errors:
        raise BadRequest("invalid report request", errors)
    return by, period


def usage_report_for(*, user, by: str, period: ReportPeriod, now: datetime) -> UsageReport:
    scope = report_runs_scope(report_viewer_of(user), by)
    return usage_report(by=by, period=period, now=now, scope=scope)


def sizes_report_for(*, user, period: ReportPeriod, now: datetime) -> list[dict]:
    scope = report_runs_scope(report_viewer_of(user), "project")
    return sizes_report(period=period, now=now, scope=scope)
