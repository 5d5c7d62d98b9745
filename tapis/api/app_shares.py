"""App shares, shaped like the job share routes (``tapis/api/outputs.py``): ``GET, POST
/v3/apps/{id}/{version}/share`` with ``{grantee}`` (a user name or ``project:<name>``) and
``DELETE /v3/apps/{id}/{version}/share/{grantee}``. Services: ``tapis.shares``."""

from __future__ import annotations

from django.http import Http404
from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework.response import Response

from core.api.common import read_json_object
from core.api.openapi import refusal
from core.api_errors import BadRequest
from core.timefmt import utc_z
from tapis.api.outputs import PROJECT_PREFIX, _grantee
from tapis.api.serializers import (
    TapisAppShareEnvelope,
    TapisAppShareListEnvelope,
    TapisAppShareRequestSerializer,
    TapisEmptyEnvelope,
)
from tapis.api.views import TAG, TapisAPIView
from tapis.models import App, AppShare
from tapis.selectors import app_get_visible
from tapis.shapes import envelope
from tapis.shares import app_share_create, app_share_revoke, app_shares_list

_FIELDS = ("grantee", "appPermission")


def app_share_item(share: AppShare) -> dict:
    if share.grantee_user is not None:
        grantee = share.grantee_user.username
    else:
        assert share.grantee_project is not None  # a share has a user or a project
        grantee = PROJECT_PREFIX + share.grantee_project.name
    return {
        "grantee": grantee,
        "appId": share.app.app_id,
        "appVersion": share.app.version,
        "appPermission": "READ",
        "createdby": share.created_by.username,
        "created": utc_z(share.created),
    }


def _app(request, app_id: str, version: str) -> App:
    app = app_get_visible(request.user, app_id, version)
    if app is None:
        raise Http404(f"no app {app_id} version {version}")
    return app


class AppShareView(TapisAPIView):
    @extend_schema(
        operation_id="tapis_apps_share_list",
        tags=[TAG],
        summary="getAppShares: who an app version is shared with",
        description="Every share of the app version (a project grantee as `project:<name>`).",
        responses={200: TapisAppShareListEnvelope},
    )
    def get(self, request, app_id, version):
        app = _app(request, app_id, version)
        shares = app_shares_list(app=app, user=request.user)
        return Response(envelope([app_share_item(s) for s in shares], "app shares"))

    @extend_schema(
        operation_id="tapis_apps_share",
        tags=[TAG],
        summary="shareApp: let a user or a project use an app version",
        description="Shares the app version read-only (appPermission READ) with a user or "
        "`project:<name>`: they may run it, not change it.",
        request=TapisAppShareRequestSerializer,
        examples=[
            OpenApiExample("with a project", {"grantee": "project:vision"}, request_only=True)
        ],
        responses={
            201: TapisAppShareEnvelope,
            400: refusal("an invalid share: every problem is named"),
            403: refusal("only the app's owner or an admin may share it"),
            409: refusal("the app version is already shared with this grantee"),
        },
    )
    def post(self, request, app_id, version):
        app = _app(request, app_id, version)
        body = read_json_object(request)
        errors = [f"{key}: unknown field" for key in body if key not in _FIELDS]
        if body.get("appPermission", "READ") != "READ":
            errors.append("appPermission: must be READ (shares are read-only)")
        if errors:
            raise BadRequest("invalid share", errors)
        grantee_user, grantee_project = _grantee(body.get("grantee"))
        share = app_share_create(
            app=app, user=request.user, grantee_user=grantee_user, grantee_project=grantee_project
        )
        item = app_share_item(share)
        return Response(envelope(item, f"app {app} shared with {item['grantee']}"), status=201)


class AppUnshareView(TapisAPIView):
    @extend_schema(
        operation_id="tapis_apps_unshare",
        tags=[TAG],
        summary="deleteAppShare: revoke an app share",
        description="Revokes the app version's share with a user (or `project:<name>`).",
        request=None,
        responses={
            200: TapisEmptyEnvelope,
            400: refusal("no such user or project"),
            403: refusal("only the app's owner or an admin may revoke its shares"),
        },
    )
    def delete(self, request, app_id, version, grantee):
        app = _app(request, app_id, version)
        grantee_user, grantee_project = _grantee(grantee)
        share = AppShare.objects.filter(
            app=app, grantee_user=grantee_user, grantee_project=grantee_project
        ).first()
        if share is None:
            raise Http404(f"app {app} is not shared with {grantee}")
        app_share_revoke(share=share, user=request.user)
        return Response(envelope(None, f"share of app {app} with {grantee} revoked"))
