"""The portal's account endpoints: API token, projects, me."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from accounts.models import ApiToken, Project, user_urn
from accounts.permissions import may_view_all_projects, user_is_admin
from accounts.selectors import projects_of
from accounts.tokens import api_token_of, api_token_rotate
from core.api.common import PortalAPIView
from core.timefmt import utc_z

PORTAL_TAG = "portal"


class TokenSerializer(serializers.Serializer):
    token = serializers.CharField(
        allow_null=True, help_text="the key: only in the answer that created it, else null"
    )
    prefix = serializers.CharField(allow_null=True, help_text="first characters of the key")
    created = serializers.CharField(allow_null=True)
    last_used = serializers.CharField(allow_null=True)
    username = serializers.CharField()


def _token_body(user, token: ApiToken | None, key: str | None = None) -> dict:
    return {
        "token": key,
        "prefix": token.prefix if token else None,
        "created": utc_z(token.created) if token else None,
        "last_used": utc_z(token.last_used) if token and token.last_used else None,
        "username": user.username,
    }


class TokenView(PortalAPIView):
    """The caller's API token (``Authorization: Token <key>``). Keys are stored hashed: the key
    itself is in the answer to the POST that creates it and never again."""

    permission_classes = [IsAuthenticated]

    @extend_schema(
        operation_id="portal_token_get",
        tags=[PORTAL_TAG],
        summary="Your API token's prefix and dates",
        description="Keys are stored hashed: this tells which token you have (its first "
        "characters) and when it was made and last used, never the key itself.",
        responses={200: TokenSerializer},
    )
    def get(self, request):
        return Response(_token_body(request.user, api_token_of(request.user)))

    @extend_schema(
        operation_id="portal_token_rotate",
        tags=[PORTAL_TAG],
        summary="Create or rotate your API token; answers the key once",
        description="Makes a new token and answers its key, the only time the portal shows "
        "it; the old token stops working at once.",
        request=None,
        responses={201: TokenSerializer},
    )
    def post(self, request):
        token, key = api_token_rotate(user=request.user, name="api")
        return Response(_token_body(request.user, token, key), status=201)


class MemberSerializer(serializers.Serializer):
    username = serializers.CharField()
    urn = serializers.CharField()
    role = serializers.CharField()


class ProjectSerializer(serializers.Serializer):
    name = serializers.CharField()
    urn = serializers.CharField()
    description = serializers.CharField()
    gid = serializers.IntegerField()
    my_role = serializers.CharField(allow_null=True)
    members = MemberSerializer(many=True)


class ProjectListView(PortalAPIView):
    """Projects the caller belongs to (admins: every project), with their members."""

    permission_classes = [IsAuthenticated]

    @extend_schema(
        operation_id="portal_projects",
        tags=[PORTAL_TAG],
        summary="Your projects and their memberships (admins: all projects)",
        description="The projects you are a member of (admins: every project), each with its "
        "members and their roles.",
        responses={200: ProjectSerializer(many=True)},
    )
    def get(self, request):
        user = request.user
        projects = Project.objects.all() if may_view_all_projects(user) else projects_of(user)
        projects = projects.order_by("name").prefetch_related("memberships__user")
        result = []
        for project in projects:
            memberships = list(project.memberships.all())
            mine = next((m.role for m in memberships if m.user_id == user.pk), None)
            result.append(
                {
                    "name": project.name,
                    "urn": project.urn,
                    "description": project.description,
                    "gid": project.gid,
                    "my_role": mine,
                    "members": [
                        {
                            "username": m.user.username,
                            "urn": user_urn(m.user.username),
                            "role": m.role,
                        }
                        for m in memberships
                    ],
                }
            )
        return Response(result)


class MeMembershipSerializer(serializers.Serializer):
    project = serializers.CharField()
    project_urn = serializers.CharField()
    role = serializers.CharField()


class MeSerializer(serializers.Serializer):
    username = serializers.CharField()
    urn = serializers.CharField()
    email = serializers.CharField()
    is_admin = serializers.BooleanField()
    memberships = MeMembershipSerializer(many=True)


class MeView(PortalAPIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(
        operation_id="portal_me",
        tags=[PORTAL_TAG],
        summary="Who you are: username, URN, admin flag and memberships",
        description="The caller as the portal knows them: the user URN jobs carry, whether "
        "they have admin powers, and their projects.",
        responses={200: MeSerializer},
    )
    def get(self, request):
        user = request.user
        memberships = user.memberships.select_related("project").order_by("project__name")
        return Response(
            {
                "username": user.username,
                "urn": user_urn(user.username),
                "email": user.email,
                "is_admin": user_is_admin(user),
                "memberships": [
                    {"project": m.project.name, "project_urn": m.project.urn, "role": m.role}
                    for m in memberships
                ],
            }
        )
