"""``/api/portal/quotas``: the limits an admin sets (docs/quotas.md). Everyone lists the rows
that concern them (their own, their projects'); admins (``quotas.*_quota`` permissions) list
every row and create, change and delete them. Running jobs are never stopped by a change: the
next tick applies it to the jobs that wait."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.http import Http404
from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import serializers
from rest_framework.permissions import BasePermission, IsAuthenticated
from rest_framework.response import Response

from accounts.models import Project
from accounts.permissions import user_has_power
from accounts.selectors import project_ids_of
from core.api.common import PortalAPIView, read_json_object
from core.api.openapi import refusal
from core.api_errors import BadRequest
from core.signals import capacity_changed
from core.timefmt import utc_z
from quotas.models import LIMIT_FIELDS, Quota

TAG = "portal"
VERBS = {"POST": "add", "PATCH": "change", "DELETE": "delete"}


def may_manage_quotas(user, verb: str) -> bool:
    return user_has_power(user, f"quotas.{verb}_quota")


class IsAdminForWrites(BasePermission):
    message = "only admins may create, change or delete quotas"

    def has_permission(self, request, view):
        if request.method in ("GET", "HEAD", "OPTIONS"):
            return True
        verb = VERBS.get(request.method)
        return verb is not None and may_manage_quotas(request.user, verb)


def _count_level() -> serializers.IntegerField:
    """A hard or soft level of a count (GPUs, jobs at once): absent or null means no limit."""
    return serializers.IntegerField(
        min_value=0, max_value=1_000_000, required=False, allow_null=True
    )


def _hours_level() -> serializers.FloatField:
    """A hard or soft level of a monthly budget in hours: absent or null means no limit."""
    return serializers.FloatField(min_value=0, max_value=1e9, required=False, allow_null=True)


class QuotaSerializer(serializers.Serializer):
    project = serializers.CharField(max_length=32, required=False, allow_null=True)
    user = serializers.CharField(max_length=150, required=False, allow_null=True)
    comment = serializers.CharField(max_length=300, required=False, allow_blank=True)
    gpus_hard = _count_level()
    gpus_soft = _count_level()
    jobs_hard = _count_level()
    jobs_soft = _count_level()
    gpu_hours_hard = _hours_level()
    gpu_hours_soft = _hours_level()
    cpu_hours_hard = _hours_level()
    cpu_hours_soft = _hours_level()
    mem_gb_hours_hard = _hours_level()
    mem_gb_hours_soft = _hours_level()


class QuotaOutSerializer(QuotaSerializer):
    id = serializers.IntegerField()
    scope = serializers.ChoiceField(choices=["project", "user", "member"])
    updated = serializers.CharField()


def quota_json(quota: Quota) -> dict:
    return {
        "id": quota.pk,
        "scope": quota.scope,
        "project": quota.project.name if quota.project else None,
        "user": quota.user.username if quota.user else None,
        "comment": quota.comment,
        **{name: getattr(quota, name) for name in LIMIT_FIELDS},
        "updated": utc_z(quota.updated),
    }


def _visible(user):
    rows = Quota.objects.select_related("project", "user").order_by("id")
    if may_manage_quotas(user, "view") or may_manage_quotas(user, "change"):
        return rows
    return rows.filter(Q(user=user) | Q(user__isnull=True, project_id__in=project_ids_of(user)))


def _validated(request, *, partial: bool) -> dict:
    body = read_json_object(request)
    unknown = sorted(set(body) - set(QuotaSerializer().fields))
    if unknown:
        raise BadRequest("invalid quota", [f"{key}: unknown field" for key in unknown])
    serializer = QuotaSerializer(data=body, partial=partial)
    serializer.is_valid(raise_exception=True)
    data = {k: v for k, v in serializer.validated_data.items() if k in body}
    errors = []
    if "project" in data:
        name = data.pop("project")
        data["project"] = Project.objects.filter(name=name).first() if name else None
        if name and data["project"] is None:
            errors.append(f"project: no project {name!r}")
    if "user" in data:
        name = data.pop("user")
        data["user"] = get_user_model().objects.filter(username=name).first() if name else None
        if name and data["user"] is None:
            errors.append(f"user: no user {name!r}")
    if errors:
        raise BadRequest("invalid quota", errors)
    return data


def _save(quota: Quota, data: dict) -> Quota:
    for name, value in data.items():
        setattr(quota, name, value)
    errors = []
    if quota.project is None and quota.user is None:
        errors.append("project: a quota names a project, a user or both")
    for stem in {name.rsplit("_", 1)[0] for name in LIMIT_FIELDS}:
        hard, soft = getattr(quota, f"{stem}_hard"), getattr(quota, f"{stem}_soft")
        if hard is not None and soft is not None and soft > hard:
            errors.append(f"{stem}_soft: must be at most {stem}_hard ({hard:g})")
    if errors:
        raise BadRequest("invalid quota", errors)
    try:
        with transaction.atomic():
            quota.save()
    except IntegrityError:
        raise BadRequest("invalid quota", ["project: this scope has a quota already"]) from None
    # The scheduler looks again: a raised limit may let waiting jobs start.
    transaction.on_commit(lambda: capacity_changed.send(sender=Quota))
    return quota


def _get(request, quota_id: str) -> Quota:
    found = _visible(request.user).filter(pk=int(quota_id)).first()
    if found is None:
        raise Http404("no such quota")
    return found


_INVALID = refusal("an invalid quota: every problem is named")
_ADMINS = refusal("only admins may create, change or delete quotas")
_EXAMPLE = OpenApiExample(
    "alice in project vision: 2 GPUs at once, 100 GPU-hours a month (80 soft)",
    {
        "project": "vision",
        "user": "alice",
        "gpus_hard": 2,
        "gpu_hours_hard": 100,
        "gpu_hours_soft": 80,
    },
    request_only=True,
)


class QuotaListView(PortalAPIView):
    permission_classes = [IsAuthenticated, IsAdminForWrites]

    @extend_schema(
        operation_id="portal_quotas_list",
        tags=[TAG],
        summary="Quotas: yours and your projects' (admins: all)",
        description="The limits that concern you: your own rows and your projects' (admins see "
        "every row). Hard levels keep jobs waiting; soft levels are shown (docs/quotas.md).",
        responses={200: QuotaOutSerializer(many=True)},
    )
    def get(self, request):
        return Response([quota_json(q) for q in _visible(request.user)[:1000]])

    @extend_schema(
        operation_id="portal_quota_create",
        tags=[TAG],
        summary="Set the limits of a project, a user, or a user within a project (admins)",
        description="One row per scope; blank limits are none. Every problem is named; the "
        "scheduler looks again at once.",
        request=QuotaSerializer,
        examples=[_EXAMPLE],
        responses={201: QuotaOutSerializer, 400: _INVALID, 403: _ADMINS},
    )
    def post(self, request):
        quota = _save(Quota(), _validated(request, partial=False))
        return Response(quota_json(quota), status=201)


class QuotaDetailView(PortalAPIView):
    permission_classes = [IsAuthenticated, IsAdminForWrites]

    @extend_schema(
        operation_id="portal_quota_get",
        tags=[TAG],
        summary="One quota",
        description="A row you may see: your own, your project's, or any (admins).",
        responses={200: QuotaOutSerializer, 404: refusal("no such quota among those you see")},
    )
    def get(self, request, quota_id: str):
        return Response(quota_json(_get(request, quota_id)))

    @extend_schema(
        operation_id="portal_quota_update",
        tags=[TAG],
        summary="Change a quota (admins; send only the fields to change)",
        description="The fields sent replace the stored ones, checked as a new row is; running "
        "jobs are never stopped by a lower limit.",
        request=QuotaSerializer,
        responses={
            200: QuotaOutSerializer,
            400: _INVALID,
            403: _ADMINS,
            404: refusal("no such quota"),
        },
    )
    def patch(self, request, quota_id: str):
        quota = _save(_get(request, quota_id), _validated(request, partial=True))
        return Response(quota_json(quota))

    @extend_schema(
        operation_id="portal_quota_delete",
        tags=[TAG],
        summary="Delete a quota (admins): the site's defaults apply again",
        description="The scope falls back on PORTAL_QUOTA_DEFAULTS (none: unlimited).",
        responses={204: None, 403: _ADMINS, 404: refusal("no such quota")},
    )
    def delete(self, request, quota_id: str):
        _get(request, quota_id).delete()
        transaction.on_commit(lambda: capacity_changed.send(sender=Quota))
        return Response(status=204)
