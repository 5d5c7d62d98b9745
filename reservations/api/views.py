"""Portal reservation endpoints: every logged-in user lists them (with an ``entitled`` flag);
only admins create, change and delete them, through ``reservations.services`` (every change asks
the scheduler for a tick).

Choices: the list shows current and future reservations (``?include_past=true`` adds ended
ones); the entitled projects and users are shown to admins only (others see null there and learn
only whether they themselves are entitled).
"""

from __future__ import annotations

import re

from django.contrib.auth import get_user_model
from django.http import Http404
from django.utils import timezone
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.permissions import BasePermission, IsAuthenticated
from rest_framework.response import Response

from accounts.models import Project, user_urn
from accounts.permissions import may_manage_reservations, may_view_all_reservations
from clusters.models import Cluster, Slave
from core.api.common import PortalAPIView, parse_bool, parse_uuid_or_404, read_json_object
from core.api.openapi import refusal
from core.api_errors import BadRequest
from core.timefmt import utc_z
from reservations.models import Reservation
from reservations.services import FIELDS as RULE_FIELDS
from reservations.services import (
    ReservationInvalid,
    entitled_reservations,
    reservation_create,
    reservation_delete,
    reservation_update,
    reservation_validate,
)

TAG = "portal"
FIELDS: tuple[str, ...] = (
    "name",
    "description",
    "cluster_id",
    "slaves",
    "gpu_count",
    "start",
    "end",
)
FIELDS += ("projects", "users")
_URN_RE = re.compile(r"^urn:publicid:IDN\+[^+]+\+(?P<kind>user|project)\+(?P<name>[^+]+)$")


class IsAdminForWrites(BasePermission):
    """Writes need the matching Django permission (superusers hold them all)."""

    message = "only admins may create, change or delete reservations"
    VERBS = {"POST": "add", "PUT": "change", "PATCH": "change", "DELETE": "delete"}

    def has_permission(self, request, view):
        if request.method in ("GET", "HEAD", "OPTIONS"):
            return True
        verb = self.VERBS.get(request.method)
        return verb is not None and may_manage_reservations(request.user, verb)


class ReservationSerializer(serializers.Serializer):
    """Input of create (all required fields) and update (PATCH: any subset)."""

    name = serializers.CharField(max_length=100)
    description = serializers.CharField(required=False, allow_blank=True, default="")
    cluster_id = serializers.IntegerField(min_value=0)
    slaves = serializers.ListField(
        child=serializers.CharField(max_length=64), required=False, default=list, max_length=1000
    )
    gpu_count = serializers.IntegerField(min_value=1, required=False, allow_null=True, default=None)
    start = serializers.DateTimeField()
    end = serializers.DateTimeField()
    projects = serializers.ListField(
        child=serializers.CharField(max_length=300),
        required=False,
        default=list,
        max_length=1000,
        help_text="project names or URNs",
    )
    users = serializers.ListField(
        child=serializers.CharField(max_length=300),
        required=False,
        default=list,
        max_length=1000,
        help_text="usernames or user URNs",
    )


class ReservationOutSerializer(serializers.Serializer):
    uuid = serializers.UUIDField()
    name = serializers.CharField()
    description = serializers.CharField()
    cluster_id = serializers.IntegerField()
    slaves = serializers.ListField(child=serializers.CharField())
    gpu_count = serializers.IntegerField(allow_null=True)
    start = serializers.CharField()
    end = serializers.CharField()
    active = serializers.BooleanField()
    entitled = serializers.BooleanField()
    projects = serializers.ListField(child=serializers.CharField(), allow_null=True)
    users = serializers.ListField(child=serializers.CharField(), allow_null=True)


def _names(values: list[str], kind: str) -> list[str]:
    names = []
    for value in values:
        match = _URN_RE.match(value)
        names.append(match.group("name") if match and match.group("kind") == kind else value)
    return names


def _resolve(data: dict, *, current: Reservation | None = None) -> dict:
    """Turn validated input into model objects, then apply ``reservation_validate`` (the rules
    the form and the admin apply); BadRequest naming every problem at once."""
    errors = []
    resolved = dict(data)
    if "cluster_id" in data:
        cluster = Cluster.objects.filter(pk=data["cluster_id"]).first()
        if cluster is None:
            errors.append(f"cluster_id: no cluster {data['cluster_id']}")
        resolved["cluster"] = cluster
    else:
        resolved["cluster"] = current.cluster if current else None
    if "slaves" in data:
        names = data["slaves"]
        slaves = {s.name: s for s in Slave.objects.filter(name__in=names)}
        for index, name in enumerate(names):
            if name not in slaves:
                errors.append(f"slaves[{index}]: no slave {name!r}")
        resolved["slaves"] = [slaves[n] for n in names if n in slaves]
    if "projects" in data:
        names = _names(data["projects"], "project")
        found = {p.name: p for p in Project.objects.filter(name__in=names)}
        for index, name in enumerate(names):
            if name not in found:
                errors.append(f"projects[{index}]: no project {name!r}")
        resolved["projects"] = [found[n] for n in names if n in found]
    if "users" in data:
        names = _names(data["users"], "user")
        users = {u.username: u for u in get_user_model().objects.filter(username__in=names)}
        for index, name in enumerate(names):
            if name not in users:
                errors.append(f"users[{index}]: no user {name!r}")
        resolved["users"] = [users[n] for n in names if n in users]
    given = {name: resolved[name] for name in RULE_FIELDS if name in resolved}
    unresolved = any(e.startswith("slaves[") for e in errors)
    for field, rule in reservation_validate(data=given, instance=current, capacity=not unresolved):
        field = "cluster_id" if field == "cluster" else field
        if field == "cluster_id" and any(e.startswith("cluster_id:") for e in errors):
            continue  # already named: no such cluster
        errors.append(f"{field}: {rule}")
    if errors:
        raise BadRequest("invalid reservation", errors)
    return resolved


def _refused(refused: ReservationInvalid) -> BadRequest:
    """A refusal by the service itself (a concurrent write got there first)."""
    errors = [f"{'cluster_id' if f == 'cluster' else f}: {rule}" for f, rule in refused.errors]
    return BadRequest("invalid reservation", errors)


def _validated(request, *, partial: bool) -> dict:
    body = read_json_object(request)
    unknown = sorted(set(body) - set(FIELDS))
    if unknown:
        raise BadRequest("invalid reservation", [f"{key}: unknown field" for key in unknown])
    serializer = ReservationSerializer(data=body, partial=partial)
    serializer.is_valid(raise_exception=True)
    data = dict(serializer.validated_data)
    if partial:  # only what was sent: defaults must not overwrite stored values
        data = {key: value for key, value in data.items() if key in body}
    return data


def reservation_json(reservation: Reservation, *, user, now) -> dict:
    admin = may_view_all_reservations(user)
    projects = list(reservation.projects.all())
    users = list(reservation.users.all())
    entitled = reservation.pk in entitled_reservations(user=user, reservations=[reservation])
    return {
        "uuid": str(reservation.uuid),
        "name": reservation.name,
        "description": reservation.description,
        "cluster_id": reservation.cluster_id,
        "slaves": [s.name for s in reservation.slaves.all()],
        "gpu_count": reservation.gpu_count,
        "start": utc_z(reservation.start),
        "end": utc_z(reservation.end),
        "active": reservation.start <= now < reservation.end,
        "entitled": entitled,
        "projects": [p.urn for p in projects] if admin else None,
        "users": [user_urn(u.username) for u in users] if admin else None,
    }


_INVALID = refusal("an invalid reservation: every problem is named")
_ADMINS_ONLY = refusal("only admins may create, change or delete reservations")


def _reservations():
    return Reservation.objects.prefetch_related("slaves", "projects", "users").order_by(
        "start", "id"
    )


def _get(reservation_id: str) -> Reservation:
    found = _reservations().filter(uuid=parse_uuid_or_404(reservation_id)).first()
    if found is None:
        raise Http404("no such reservation")
    return found


class ReservationListView(PortalAPIView):
    permission_classes = [IsAuthenticated, IsAdminForWrites]

    @extend_schema(
        operation_id="portal_reservations_list",
        tags=[TAG],
        summary="Current and future reservations, with whether you are entitled to each",
        description="Reservations set GPUs aside for some projects and users; `entitled` "
        "says whether yours are among them (who exactly: admins only).",
        parameters=[OpenApiParameter("include_past", bool, description="also ended ones")],
        responses={
            200: ReservationOutSerializer(many=True),
            400: refusal("include_past is not true or false"),
        },
    )
    def get(self, request):
        now = timezone.now()
        include_past = parse_bool(request.query_params.get("include_past"), "include_past")
        queryset = _reservations()
        if not include_past:
            queryset = queryset.filter(end__gt=now)
        return Response([reservation_json(r, user=request.user, now=now) for r in queryset])

    @extend_schema(
        operation_id="portal_reservation_create",
        tags=[TAG],
        summary="Create a reservation (admins)",
        description="Checked as in the admin (window, cluster capacity, overlaps); every "
        "problem is named. The scheduler looks again at once.",
        request=ReservationSerializer,
        examples=[
            OpenApiExample(
                "two GPUs of cluster 1 for a night",
                {
                    "name": "night run",
                    "cluster_id": 1,
                    "gpu_count": 2,
                    "start": "2030-01-01T20:00:00Z",
                    "end": "2030-01-02T06:00:00Z",
                    "projects": ["vision"],
                },
                request_only=True,
            )
        ],
        responses={
            201: ReservationOutSerializer,
            400: _INVALID,
            403: _ADMINS_ONLY,
        },
    )
    def post(self, request):
        data = _resolve(_validated(request, partial=False))
        try:
            reservation = reservation_create(
                name=data["name"],
                description=data.get("description", ""),
                cluster=data["cluster"],
                start=data["start"],
                end=data["end"],
                created_by=request.user,
                slaves=data.get("slaves", []),
                gpu_count=data.get("gpu_count"),
                projects=data.get("projects", []),
                users=data.get("users", []),
            )
        except ReservationInvalid as refused:
            raise _refused(refused) from None
        body = reservation_json(_get(str(reservation.uuid)), user=request.user, now=timezone.now())
        return Response(body, status=201)


class ReservationDetailView(PortalAPIView):
    permission_classes = [IsAuthenticated, IsAdminForWrites]

    @extend_schema(
        operation_id="portal_reservation_get",
        tags=[TAG],
        summary="One reservation",
        description="The reservation, with whether you are entitled to it.",
        responses={200: ReservationOutSerializer},
    )
    def get(self, request, reservation_id: str):
        return Response(
            reservation_json(_get(reservation_id), user=request.user, now=timezone.now())
        )

    @extend_schema(
        operation_id="portal_reservation_update",
        tags=[TAG],
        summary="Change a reservation (admins; send only the fields to change)",
        description="The fields sent replace the stored ones; the result is checked as a "
        "new reservation is.",
        request=ReservationSerializer,
        examples=[OpenApiExample("a new end", {"end": "2031-01-01T00:00:00Z"}, request_only=True)],
        responses={200: ReservationOutSerializer, 400: _INVALID, 403: _ADMINS_ONLY},
    )
    def patch(self, request, reservation_id: str):
        reservation = _get(reservation_id)
        data = _resolve(_validated(request, partial=True), current=reservation)
        fields = {
            name: data[name]
            for name in ("name", "description", "gpu_count", "start", "end")
            if name in data
        }
        try:
            reservation_update(
                reservation=reservation,
                data={**fields, "cluster": data["cluster"]},
                relations={r: data[r] for r in ("slaves", "projects", "users") if r in data},
            )
        except ReservationInvalid as refused:
            raise _refused(refused) from None
        return Response(
            reservation_json(_get(reservation_id), user=request.user, now=timezone.now())
        )

    @extend_schema(
        operation_id="portal_reservation_delete",
        tags=[TAG],
        summary="Delete a reservation (admins)",
        description="The reservation's GPUs are free for everyone again at once.",
        responses={204: None, 403: _ADMINS_ONLY},
    )
    def delete(self, request, reservation_id: str):
        reservation_delete(reservation=_get(reservation_id))
        return Response(status=204)
