"""``/api/portal/reports/usage`` and ``/api/portal/reports/sizes``: the usage reports as JSON
(docs/reports.md). Everyone may ask; the rows are those the caller may see
(reports/visibility.py)."""

from __future__ import annotations

from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from core.api.common import PortalAPIView
from core.api.openapi import refusal
from reports.accounting import BY_CHOICES
from reports.exports import sizes_json, usage_json
from reports.periods import PRESETS
from reports.queries import report_request, sizes_report_for, usage_report_for

TAG = "portal"
_PERIOD = [
    OpenApiParameter("from", str, description="First day (YYYY-MM-DD, your zone), included"),
    OpenApiParameter("to", str, description="Last day (YYYY-MM-DD, your zone), included"),
    OpenApiParameter(
        "preset", str, enum=list(PRESETS), description="Without from/to (default this-month)"
    ),
]
_INVALID = refusal("a bad parameter: each is named (by, from, to, preset)")


class ReportUsageView(PortalAPIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(
        operation_id="portal_reports_usage",
        tags=[TAG],
        summary="Usage per user, project, user in a project or cluster over a period",
        description="GPU-, CPU- and memory-GB-hours (runs clipped to the period), jobs by end "
        "state, wait p50/p90, GPU utilisation where sampled, borrowed GPU-hours; like sreport "
        "cluster AccountUtilizationByUser. At most 366 days. Your own row and your projects' "
        "totals; a project's managers see its users; admins everything.",
        parameters=[OpenApiParameter("by", str, enum=list(BY_CHOICES)), *_PERIOD],
        responses={200: OpenApiTypes.OBJECT, 400: _INVALID},
    )
    def get(self, request):
        now = timezone.now()
        by, period = report_request(request.query_params, user=request.user, now=now)
        report = usage_report_for(user=request.user, by=by, period=period, now=now)
        return Response(usage_json(report))


class ReportSizesView(PortalAPIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(
        operation_id="portal_reports_sizes",
        tags=[TAG],
        summary="Runs and GPU-hours per project by GPU count over a period",
        description="Like sreport job SizesByAccount, with GPU-count buckets 0, 1, 2-3, 4-7, "
        "8-15, 16+. Your projects (admins: all).",
        parameters=_PERIOD,
        responses={200: OpenApiTypes.OBJECT, 400: _INVALID},
    )
    def get(self, request):
        now = timezone.now()
        _, period = report_request(request.query_params, user=request.user, now=now)
        rows = sizes_report_for(user=request.user, period=period, now=now)
        return Response(sizes_json(period, rows, now=now))
