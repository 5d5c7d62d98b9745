"""Portal API of a job's outputs and shares (docs/api.md): thin views over
``jobs.runtime.outputs`` and ``jobs.actions.shares``, which hold the rules (who reads, path
escapes, sizes, who shares). A job's subscriptions are the notifications app's route
(notifications/api/)."""

from __future__ import annotations

from django.http import Http404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from core.api.common import PortalAPIView, parse_bool, read_json_object
from core.api_errors import BadRequest
from jobs.actions.shares import (
    job_share_create,
    job_share_revoke,
    job_shares_list,
    share_as_json,
    share_grantee_from,
)
from jobs.api.serializers import ErrorSerializer
from jobs.api.views import PORTAL_TAG, get_visible_job
from jobs.models import JobShare
from jobs.runtime.outputs import job_output_response, job_outputs_list

_ERRORS = {400: ErrorSerializer, 403: ErrorSerializer, 404: ErrorSerializer}
_PATH = OpenApiParameter("path", OpenApiTypes.STR, description="relative to the output folder")


class JobOutputListView(PortalAPIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(
        operation_id="portal_job_outputs_list",
        tags=[PORTAL_TAG],
        summary="The job's archived outputs: path, size, modified, type",
        parameters=[_PATH, OpenApiParameter("recursive", OpenApiTypes.BOOL)],
        responses={200: OpenApiTypes.OBJECT, **_ERRORS},
    )
    def get(self, request, job_id: str):
        job = get_visible_job(request, job_id)
        recursive = parse_bool(request.query_params.get("recursive"), "recursive")
        path = request.query_params.get("path", "")
        items = job_outputs_list(job=job, user=request.user, path=path, recursive=recursive)
        return Response({"items": items})


class JobOutputDownloadView(PortalAPIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(
        operation_id="portal_job_outputs_download",
        tags=[PORTAL_TAG],
        summary="Download one output file, or a folder (zip=1: also a file) as a streamed zip",
        parameters=[_PATH, OpenApiParameter("zip", OpenApiTypes.BOOL)],
        responses={(200, "application/octet-stream"): OpenApiTypes.BINARY, **_ERRORS},
    )
    def get(self, request, job_id: str):
        job = get_visible_job(request, job_id)
        as_zip = parse_bool(request.query_params.get("zip"), "zip")
        path = request.query_params.get("path", "")
        return job_output_response(job=job, user=request.user, path=path, as_zip=as_zip)


class JobShareListView(PortalAPIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(
        operation_id="portal_job_shares_list",
        tags=[PORTAL_TAG],
        summary="Who the job is shared with (read-only)",
        responses={200: OpenApiTypes.OBJECT, **_ERRORS},
    )
    def get(self, request, job_id: str):
        job = get_visible_job(request, job_id)
        shares = job_shares_list(job=job, user=request.user)
        return Response({"items": [share_as_json(share) for share in shares]})

    @extend_schema(
        operation_id="portal_job_shares_create",
        tags=[PORTAL_TAG],
        summary='Share the job read-only: {"user": NAME} or {"project": NAME}',
        request={"application/json": OpenApiTypes.OBJECT},
        responses={201: OpenApiTypes.OBJECT, **_ERRORS, 409: ErrorSerializer},
    )
    def post(self, request, job_id: str):
        job = get_visible_job(request, job_id)
        body = read_json_object(request)
        errors = [
            f"{key}: must be a name (a string)"
            for key in ("user", "project")
            if body.get(key) is not None and not isinstance(body.get(key), str)
        ]
        errors += [f"{key}: unknown field" for key in body if key not in ("user", "project")]
        if not errors and bool(body.get("user")) == bool(body.get("project")):
            errors.append("(body): name exactly one of user, project")
        if errors:
            raise BadRequest("invalid share", errors)
        grantee_user, grantee_project = share_grantee_from(
            user_name=body.get("user"), project_name=body.get("project")
        )
        share = job_share_create(
            job=job, user=request.user, grantee_user=grantee_user, grantee_project=grantee_project
        )
        return Response(share_as_json(share), status=201)


class JobShareDetailView(PortalAPIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(
        operation_id="portal_job_shares_revoke",
        tags=[PORTAL_TAG],
        summary="Revoke a share",
        request=None,
        responses={204: None, **_ERRORS},
    )
    def delete(self, request, job_id: str, share_id: str):
        job = get_visible_job(request, job_id)
        share = (
            JobShare.objects.select_related("job", "grantee_user", "grantee_project")
            .filter(job=job, pk=int(share_id) if share_id.isdigit() else -1)
            .first()
        )
        if share is None:
            raise Http404("no such share")
        job_share_revoke(share=share, user=request.user)
        return Response(status=204)
