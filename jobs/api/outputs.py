"""Portal API of a job's outputs and shares (docs/api.md): thin views over
``jobs.execution.outputs`` and ``jobs.user_actions.shares``, which hold the rules (who reads, path
escapes, sizes, who shares). A job's subscriptions are the notifications app's route
(notifications/api/)."""

from __future__ import annotations

from django.http import Http404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from core.api.common import PortalAPIView, parse_bool, read_json_object
from core.api.openapi import refusal
from core.api_errors import BadRequest
from jobs.api.serializers import (
    JobShareListSerializer,
    JobShareRequestSerializer,
    JobShareSerializer,
    OutputListSerializer,
)
from jobs.api.views import PORTAL_TAG, get_visible_job
from jobs.execution.outputs import job_output_response, job_outputs_list
from jobs.models import JobShare
from jobs.user_actions.shares import (
    job_share_create,
    job_share_revoke,
    job_shares_list,
    share_as_json,
    share_grantee_from,
)

_READERS_ONLY = refusal("only members of the job's project and those it is shared with")
_PATH = OpenApiParameter("path", OpenApiTypes.STR, description="relative to the output folder")


class JobOutputListView(PortalAPIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(
        operation_id="portal_job_outputs_list",
        tags=[PORTAL_TAG],
        summary="The job's archived outputs: path, size, modified, type",
        description="The entries of the job's output folder at `path` (or that one file); "
        "`recursive` walks below it. Outputs are archived when the job ends (docs/api.md).",
        parameters=[_PATH, OpenApiParameter("recursive", OpenApiTypes.BOOL)],
        responses={
            200: OutputListSerializer,
            400: refusal("a bad query parameter, or a path leaving the output folder"),
            403: _READERS_ONLY,
        },
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
        summary="Download one output file, or a folder as a streamed zip",
        description="One file as it is; a folder (or a file with `zip=true`) as a zip "
        "streamed while it is made.",
        parameters=[_PATH, OpenApiParameter("zip", OpenApiTypes.BOOL)],
        responses={
            (200, "*/*"): OpenApiResponse(
                OpenApiTypes.BINARY, description="the file's bytes, with its own media type"
            ),
            (200, "application/zip"): OpenApiResponse(
                OpenApiTypes.BINARY, description="a folder (or zip=true) as a zip"
            ),
            400: refusal("a bad query parameter, or a path leaving the output folder"),
            403: _READERS_ONLY,
        },
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
        description="Every share of the job: a user or a project reads it (job, log, "
        "outputs) without acting on it.",
        responses={200: JobShareListSerializer, 403: _READERS_ONLY},
    )
    def get(self, request, job_id: str):
        job = get_visible_job(request, job_id)
        shares = job_shares_list(job=job, user=request.user)
        return Response({"items": [share_as_json(share) for share in shares]})

    @extend_schema(
        operation_id="portal_job_shares_create",
        tags=[PORTAL_TAG],
        summary="Share the job read-only with a user or a project",
        description='Body `{"user": NAME}` or `{"project": NAME}`: they may then read the '
        "job, its log and outputs, never act on it.",
        request=JobShareRequestSerializer,
        examples=[
            OpenApiExample("with a user", {"user": "bob"}, request_only=True),
            OpenApiExample("with a project", {"project": "vision"}, request_only=True),
        ],
        responses={
            201: JobShareSerializer,
            400: refusal("not exactly one of user, project, or no such user or project"),
            403: refusal("only members of the job's project may share it"),
            409: refusal("the job is already shared with them"),
        },
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
        description="Ends a share of the job (its id is in the list of shares).",
        request=None,
        responses={204: None, 403: refusal("only members of the job's project may revoke it")},
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
