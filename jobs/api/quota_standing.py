"""``GET /api/portal/quotas/standing``: a user's limits, usage this month and whether a job of a
given size fits, before they submit (issue 29 item 3; docs/quotas.md)."""

from __future__ import annotations

from django.conf import settings
from django.http import Http404
from django.utils import timezone
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from accounts.selectors import projects_of
from core.api.common import PortalAPIView
from core.api.openapi import refusal
from core.api_errors import BadRequest
from core.timefmt import utc_z
from jobs.scheduler_bridge.quota_usage import quota_standing
from jobs.spec.v2_scheduling import parse_duration

# A request's own bounds (GPULab's validation bounds them at submit the same way).
MAX_COUNT = 10_000


class _Level(serializers.Serializer):
    hard = serializers.FloatField(allow_null=True)
    soft = serializers.FloatField(allow_null=True)


class _Budget(_Level):
    used = serializers.FloatField(help_text="hours held this month")
    running_may_use = serializers.FloatField(help_text="hours running jobs may still use")


class _Held(_Level):
    held = serializers.IntegerField()


class _Running(_Level):
    running = serializers.IntegerField()


class _Limit(serializers.Serializer):
    scope = serializers.ChoiceField(choices=["project", "user", "member"])
    project = serializers.CharField(allow_null=True)
    user = serializers.CharField(allow_null=True)
    gpus = _Held()
    jobs = _Running()
    gpu_hours = _Budget()
    cpu_hours = _Budget()
    mem_gb_hours = _Budget()
    renews_at = serializers.CharField(allow_null=True)


class _Job(serializers.Serializer):
    gpus = serializers.IntegerField()
    cpus = serializers.IntegerField()
    memory_gb = serializers.FloatField()
    max_duration_s = serializers.IntegerField()
    may_use = serializers.DictField(child=serializers.FloatField())
    fits_ever = serializers.BooleanField()
    fits_now = serializers.BooleanField()
    reason = serializers.CharField(allow_null=True)
    borrows = serializers.CharField(
        allow_null=True, help_text="fits only above a soft level: starts only on idle GPUs"
    )


class StandingSerializer(serializers.Serializer):
    user = serializers.CharField()
    project = serializers.CharField()
    month_start = serializers.CharField()
    renews_at = serializers.CharField()
    limits = _Limit(many=True)
    job = _Job()


def _count(params, name: str, default: int) -> int:
    value = params.get(name)
    if value in (None, ""):
        return default
    try:
        number = int(value)
    except ValueError:
        raise BadRequest(f"{name}: must be a whole number") from None
    if not 0 <= number <= MAX_COUNT:
        raise BadRequest(f"{name}: must be between 0 and {MAX_COUNT}")
    return number


def standing_json(standing: dict) -> dict:
    return {
        **standing,
        "month_start": utc_z(standing["month_start"]),
        "renews_at": utc_z(standing["renews_at"]),
        "limits": [
            {**row, "renews_at": utc_z(row["renews_at"]) if row["renews_at"] else None}
            for row in standing["limits"]
        ],
    }


class QuotaStandingView(PortalAPIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(
        operation_id="portal_quota_standing",
        tags=["portal"],
        summary="Your limits, usage this month, and whether a job of this size fits",
        description="Every limit that applies to you in the project (yours within it, yours, "
        "the project's) with what was used this month and what is held now; with `gpus`, "
        "`cpus`, `memory_gb` and `max_duration`, what such a job may consume at most "
        "(resources x maxDuration) and whether it fits now and ever, with the scheduler's "
        "own line when it does not.",
        parameters=[
            OpenApiParameter(
                "project",
                str,
                required=True,
                description="a project of yours",
                examples=[OpenApiExample("a project", value="vision")],
            ),
            OpenApiParameter("gpus", int, description="the job's GPUs (default 0)"),
            OpenApiParameter("cpus", int, description="the job's CPUs (default 1)"),
            OpenApiParameter("memory_gb", int, description="cpuMemoryGb (default 1)"),
            OpenApiParameter(
                "max_duration",
                str,
                description='maxDuration, e.g. "8 hours" (default: the site\'s)',
            ),
        ],
        responses={
            200: StandingSerializer,
            400: refusal("a parameter out of range or unreadable"),
            404: refusal("no such project among yours"),
        },
    )
    def get(self, request):
        params = request.query_params
        name = params.get("project") or ""
        if not name:
            raise BadRequest("project: required")
        if not projects_of(request.user).filter(name=name).exists():
            raise Http404("no such project among yours")
        try:
            max_duration = parse_duration(
                params.get("max_duration") or settings.PORTAL_DEFAULT_MAX_DURATION
            )
        except ValueError as bad:
            raise BadRequest(f"max_duration: {bad}") from None
        standing = quota_standing(
            user=request.user.username,
            project=name,
            now=timezone.now(),
            gpus=_count(params, "gpus", 0),
            cpus=_count(params, "cpus", 1),
            memory_gb=float(_count(params, "memory_gb", 1)),
            max_duration_s=max_duration,
        )
        return Response(standing_json(standing))
