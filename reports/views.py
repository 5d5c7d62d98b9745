"""Report pages under /reports/: the usage table and chart for a period and grouping, the sizes
table, and the CSV/JSON downloads of both (the same numbers as the API)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils import timezone

from core.api_errors import BadRequest
from reports.accounting import END_STATES, KEY_COLUMNS, SIZE_LABELS
from reports.exports import (
    download_name,
    sizes_csv,
    sizes_json,
    usage_csv,
    usage_json,
)
from reports.periods import PRESETS
from reports.queries import report_request, sizes_report_for, usage_report_for
from reports.visibility import report_viewer_of

BY_LABELS = {
    "user": "Per user",
    "project": "Per project",
    "member": "Per user in project",
    "cluster": "Per cluster",
}
CHART_ROWS = 30  # the chart shows the heaviest rows; the table shows all


def _refused(request, refused: BadRequest) -> HttpResponse:
    return render(
        request,
        "reports/usage.html",
        {
            "section": "reports",
            "errors": refused.errors,
            "presets": PRESETS,
            "by_labels": BY_LABELS,
        },
        status=400,
    )


@login_required
def reports_usage(request):
    now = timezone.now()
    try:
        by, period = report_request(request.GET, user=request.user, now=now)
    except BadRequest as refused:
        return _refused(request, refused)
    report = usage_report_for(user=request.user, by=by, period=period, now=now)
    sizes = sizes_report_for(user=request.user, period=period, now=now)
    key_columns = KEY_COLUMNS[by]
    heaviest = sorted(report.rows, key=lambda r: -float(r["gpu_hours"]))[:CHART_ROWS]
    chart = {
        "labels": [" / ".join(str(r[c]) for c in key_columns) for r in heaviest],
        "gpu_hours": [r["gpu_hours"] for r in heaviest],
        "cpu_hours": [r["cpu_hours"] for r in heaviest],
        "borrowed_gpu_hours": [r["borrowed_gpu_hours"] for r in heaviest],
    }
    # The sizes table: one line per project, one column per GPU-count bucket.
    size_table: dict[str, dict[str, dict]] = {}
    for row in sizes:
        size_table.setdefault(row["project"], {})[row["gpus"]] = row
    size_rows = [
        {"project": project, "cells": [cells.get(label) for label in SIZE_LABELS]}
        for project, cells in size_table.items()
    ]
    viewer = report_viewer_of(request.user)

    def line(row: dict) -> dict:
        return {
            "keys": [row[c] for c in key_columns],
            "row": row,
            "jobs": [row[f"jobs_{s.lower()}"] for s in END_STATES],
        }

    return render(
        request,
        "reports/usage.html",
        {
            "section": "reports",
            "by": by,
            "by_labels": BY_LABELS,
            "period": period,
            "presets": PRESETS,
            "report": report,
            "key_columns": key_columns,
            "by_label": BY_LABELS[by],
            "lines": [line(row) for row in report.rows],
            "total_line": line(report.totals),
            "end_states": [s.lower() for s in END_STATES],
            "chart": chart,
            "size_labels": SIZE_LABELS,
            "size_rows": size_rows,
            "sees_everything": viewer.everything,
            "query": f"by={by}&{period.query()}",
        },
    )


def _download(request, kind: str, extension: str) -> HttpResponse:
    now = timezone.now()
    try:
        by, period = report_request(request.GET, user=request.user, now=now)
    except BadRequest as refused:
        return JsonResponse({"error": str(refused.detail), "errors": refused.errors}, status=400)
    if kind == "usage":
        report = usage_report_for(user=request.user, by=by, period=period, now=now)
        name = download_name(f"usage-by-{by}", period, extension)
        if extension == "csv":
            response = HttpResponse(usage_csv(report), content_type="text/csv; charset=utf-8")
        else:
            response = JsonResponse(usage_json(report))
    else:
        rows = sizes_report_for(user=request.user, period=period, now=now)
        name = download_name("sizes", period, extension)
        if extension == "csv":
            response = HttpResponse(sizes_csv(rows), content_type="text/csv; charset=utf-8")
        else:
            response = JsonResponse(sizes_json(period, rows, now=now))
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


@login_required
def reports_download(request, kind: str, extension: str):
    return _download(request, kind, extension)
