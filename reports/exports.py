"""A report as CSV and as JSON: the same columns (docs/reports.md), the same numbers."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence

from django.utils import timezone

from core.timefmt import utc_z
from reports.accounting import SIZE_COLUMNS, UsageReport
from reports.periods import ReportPeriod


def rows_csv(columns: Sequence[str], rows: Iterable[dict]) -> str:
    """CSV with a header row; a missing figure (no wait, no samples) is an empty cell."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow(["" if row.get(c) is None else row[c] for c in columns])
    return out.getvalue()


def usage_csv(report: UsageReport) -> str:
    """One line per row, then the totals line (its key columns say ``total``)."""
    return rows_csv(report.columns, [*report.rows, report.totals])


def sizes_csv(rows: list[dict]) -> str:
    return rows_csv(SIZE_COLUMNS, rows)


def period_json(period: ReportPeriod) -> dict:
    return {
        "from": f"{period.first_day:%Y-%m-%d}",
        "to": f"{period.last_day:%Y-%m-%d}",
        "zone": str(period.zone),
        "start": utc_z(period.start, timespec="seconds"),
        "end": utc_z(period.end, timespec="seconds"),
    }


def usage_json(report: UsageReport) -> dict:
    return {
        "by": report.by,
        "period": period_json(report.period),
        "generated": utc_z(report.now, timespec="seconds"),
        "columns": list(report.columns),
        "rows": report.rows,
        "totals": report.totals,
    }


def sizes_json(period: ReportPeriod, rows: list[dict], *, now=None) -> dict:
    return {
        "period": period_json(period),
        "generated": utc_z(now or timezone.now(), timespec="seconds"),
        "columns": list(SIZE_COLUMNS),
        "rows": rows,
    }


def download_name(kind: str, period: ReportPeriod, extension: str) -> str:
    return f"portal-{kind}-{period.first_day:%Y%m%d}-{period.last_day:%Y%m%d}.{extension}"
