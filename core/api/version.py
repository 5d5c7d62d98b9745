"""``GET version`` (GPULab v4.0): the server and API versions, for any caller."""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response

from core.api.common import PortalAPIView


class VersionSerializer(serializers.Serializer[dict[str, str]]):
    latest_client_version = serializers.CharField()
    portal_version = serializers.CharField()
    api_version = serializers.CharField()
    deployment_environment = serializers.CharField()


class VersionView(PortalAPIView):
    permission_classes = [AllowAny]

    @extend_schema(
        operation_id="gpulab_version",
        tags=["GPULab v4.0"],
        summary="Server version; gpulab-cli warns when older than latest_client_version",
        description="The portal's and the API's versions, for anyone: gpulab-cli asks first "
        "and warns when it is older than latest_client_version.",
        responses={200: VersionSerializer},
    )
    def get(self, request: Request) -> Response:
        return Response(
            {
                "latest_client_version": settings.PORTAL_LATEST_CLIENT_VERSION,
                "portal_version": settings.PORTAL_VERSION,
                "api_version": "4.0",
                "deployment_environment": settings.PORTAL_DEPLOYMENT_ENVIRONMENT,
            }
        )
