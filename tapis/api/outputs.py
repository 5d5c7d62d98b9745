"""Tapis' output and share operations, served by the portal's outputs and shares services
(``jobs.execution.outputs``, ``jobs.user_actions.shares``; their rules, limits and the one read rule apply as on every
other path): getJobOutputList, getJobOutputDownload, shareJob, getJobShare, deleteJobShare
(docs/tapis.md)."""

from __future__ import annotations

import mimetypes

from django.contrib.auth import get_user_model
from django.http import Http404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.response import Response

from accounts.models import Project
from core.api.common import parse_bool, read_json_object
from core.api.openapi import refusal
from core.api_errors import BadRequest
from core.errors import Conflict
from core.timefmt import utc_z
from jobs.execution.outputs import job_output_response, job_outputs_list
from jobs.models import JobShare
from jobs.states import TERMINAL
from jobs.user_actions.shares import job_share_create, job_share_revoke, job_shares_list
from tapis.api.serializers import (
    TapisFileListEnvelope,
    TapisJobShareListEnvelope,
    TapisMessageEnvelope,
    TapisShareRequestSerializer,
)
from tapis.api.views import (
    BAD_QUERY,
    ENDED_ONLY,
    LIST_LIMIT_DEFAULT,
    LIST_LIMIT_MAX,
    LIST_PAGING,
    TAG,
    TapisAPIView,
    int_param,
    tapis_job,
)
from tapis.shapes import TENANT, envelope

KINDS = {"file": "file", "dir": "dir", "link": "symbolic_link"}
JOB_RESOURCES = ("JOB_HISTORY", "JOB_RESUBMIT_REQUEST", "JOB_OUTPUT", "JOB_INPUT")
PROJECT_PREFIX = "project:"


def _require_ended(request, job) -> None:
    """Tapis serves the outputs of ended jobs, or with allowIfRunning=true what there is."""
    allow = parse_bool(request.query_params.get("allowIfRunning"), "allowIfRunning")
    if job.status not in TERMINAL and not allow:
        raise Conflict(
            f"job {job.uuid} has not ended ({job.status}): its outputs are archived when it "
            "ends (allowIfRunning=true lists what is there already)"
        )


def file_info(item: dict, download_base: str) -> dict:
    """An entry of ``job_outputs_list`` as Tapis' FileInfo."""
    path = item["path"]
    name = path.rsplit("/", 1)[-1]
    kind = KINDS.get(item["type"], "other")
    mime = mimetypes.guess_type(name)[0] or "application/octet-stream"
    return {
        "mimeType": mime if kind == "file" else None,
        "type": kind,
        "owner": None,
        "group": None,
        "nativePermissions": None,
        "url": f"{download_base}{path}",
        "lastModified": item["modified"],
        "name": name,
        "path": path,
        "size": item["size"],
    }


_ALLOW_IF_RUNNING = OpenApiParameter(
    "allowIfRunning", bool, description="also while the job runs: what is there already"
)


class JobOutputListView(TapisAPIView):
    @extend_schema(
        operation_id="tapis_jobs_output_list",
        tags=[TAG],
        summary="getJobOutputList: the entries of an output folder",
        description="The entries of the job's archived output folder at `output_path` "
        "(empty: the top); `recurse=true` walks below it.",
        parameters=[
            *LIST_PAGING,
            OpenApiParameter("recurse", bool, description="also every folder below"),
            _ALLOW_IF_RUNNING,
        ],
        responses={
            200: TapisFileListEnvelope,
            400: refusal("a query parameter out of its range, or a path leaving the folder"),
            403: refusal("only members of the job's project and its sharees read its outputs"),
            409: ENDED_ONLY,
        },
    )
    def get(self, request, job_uuid, output_path=""):
        job = tapis_job(request, job_uuid)
        _require_ended(request, job)
        limit = int_param(request, "limit", LIST_LIMIT_DEFAULT, LIST_LIMIT_MAX)
        skip = int_param(request, "skip", 0)
        recursive = bool(parse_bool(request.query_params.get("recurse"), "recurse"))
        entries = job_outputs_list(
            job=job, user=request.user, path=output_path.strip("/"), recursive=recursive
        )
        base = request.build_absolute_uri(f"/api/tapis/v3/jobs/{job.uuid}/output/download/")
        items = [file_info(item, base) for item in entries[skip : skip + limit]]
        return Response(envelope(items, "job outputs listed"))


class JobOutputDownloadView(TapisAPIView):
    @extend_schema(
        operation_id="tapis_jobs_output_download",
        tags=[TAG],
        summary="getJobOutputDownload: an output file, or a folder as a zip",
        description="One file as it is (tapipy hands back its bytes); a folder (a path "
        'ending in "/", the top, or `compress=true`) as a streamed zip.',
        parameters=[
            OpenApiParameter("compress", bool, description="a zip even of one file"),
            _ALLOW_IF_RUNNING,
        ],
        responses={
            (200, "*/*"): OpenApiResponse(
                OpenApiTypes.BINARY, description="the file's bytes, with its own media type"
            ),
            (200, "application/zip"): OpenApiResponse(
                OpenApiTypes.BINARY, description="a folder as a zip"
            ),
            400: BAD_QUERY,
            403: refusal("only members of the job's project and its sharees read its outputs"),
            409: ENDED_ONLY,
        },
    )
    def get(self, request, job_uuid, output_path=""):
        job = tapis_job(request, job_uuid)
        _require_ended(request, job)
        as_zip = output_path.strip("/") == "" or output_path.endswith("/")
        as_zip = as_zip or bool(parse_bool(request.query_params.get("compress"), "compress"))
        return job_output_response(
            job=job, user=request.user, path=output_path.strip("/"), as_zip=as_zip
        )


def share_item(share: JobShare) -> dict:
    """A share as Tapis' JobShareListDTO (a project grantee as ``project:<name>``)."""
    if share.grantee_user is not None:
        grantee = share.grantee_user.username
    else:
        assert share.grantee_project is not None  # a share has a user or a project
        grantee = PROJECT_PREFIX + share.grantee_project.name
    return {
        "tenant": TENANT,
        "createdby": share.created_by.username,
        "jobUuid": str(share.job.uuid),
        "grantee": grantee,
        # The portal shares a job whole: history, resubmit request, outputs and inputs.
        "jobResource": ",".join(JOB_RESOURCES),
        "jobPermission": "READ",
        "created": utc_z(share.created),
    }


def _grantee(value) -> tuple:
    """(user, project) a Tapis ``grantee`` names: a user name, or ``project:<name>``."""
    if not isinstance(value, str) or not value.strip():
        raise BadRequest("invalid share", ["grantee: is required (a user name)"])
    if value.startswith(PROJECT_PREFIX):
        name = value[len(PROJECT_PREFIX) :]
        project = Project.objects.filter(name=name).first()
        if project is None:
            raise BadRequest("invalid share", [f"grantee: no project {name!r}"])
        return None, project
    user = get_user_model().objects.filter(username=value).first()
    if user is None:
        raise BadRequest("invalid share", [f"grantee: no user {value!r}"])
    return user, None


class JobShareView(TapisAPIView):
    @extend_schema(
        operation_id="tapis_jobs_share_list",
        tags=[TAG],
        summary="getJobShare: who the job is shared with",
        description="Every share of the job (a project grantee as `project:<name>`).",
        responses={200: TapisJobShareListEnvelope},
    )
    def get(self, request, job_uuid):
        job = tapis_job(request, job_uuid)
        shares = job_shares_list(job=job, user=request.user)
        return Response(envelope([share_item(s) for s in shares], "job shares"))

    @extend_schema(
        operation_id="tapis_jobs_share",
        tags=[TAG],
        summary="shareJob: share a job read-only",
        description="Tapis' ReqShareJob: the portal shares a job read-only and whole "
        "(jobPermission READ, every jobResource) with a user or `project:<name>`.",
        request=TapisShareRequestSerializer,
        examples=[OpenApiExample("with a user", {"grantee": "bob"}, request_only=True)],
        responses={
            200: TapisMessageEnvelope,
            400: refusal("an invalid share: every problem is named"),
            403: refusal("only members of the job's project may share it"),
            409: refusal("the job is already shared with this grantee"),
        },
    )
    def post(self, request, job_uuid):
        job = tapis_job(request, job_uuid)
        body = read_json_object(request)
        errors = [f"{key}: unknown field" for key in body if key not in _SHARE_FIELDS]
        permission = body.get("jobPermission", "READ")
        if permission != "READ":
            errors.append("jobPermission: must be READ (shares are read-only)")
        resources = body.get("jobResource", list(JOB_RESOURCES))
        if not isinstance(resources, list) or any(r not in JOB_RESOURCES for r in resources):
            errors.append(f"jobResource: must be a list of {', '.join(JOB_RESOURCES)}")
        if errors:
            raise BadRequest("invalid share", errors)
        grantee_user, grantee_project = _grantee(body.get("grantee"))
        share = job_share_create(
            job=job, user=request.user, grantee_user=grantee_user, grantee_project=grantee_project
        )
        return Response(
            envelope({"message": f"job {job.uuid} shared with {share_item(share)['grantee']}"})
        )


_SHARE_FIELDS = ("grantee", "jobResource", "jobPermission")


class JobUnshareView(TapisAPIView):
    @extend_schema(
        operation_id="tapis_jobs_unshare",
        tags=[TAG],
        summary="deleteJobShare: revoke a share",
        description="Revokes the job's share with a user (or `project:<name>`).",
        request=None,
        responses={
            200: TapisMessageEnvelope,
            400: refusal("no such user or project"),
            403: refusal("only members of the job's project may revoke its shares"),
        },
    )
    def delete(self, request, job_uuid, grantee):
        job = tapis_job(request, job_uuid)
        grantee_user, grantee_project = _grantee(grantee)
        share = JobShare.objects.filter(
            job=job, grantee_user=grantee_user, grantee_project=grantee_project
        ).first()
        if share is None:
            raise Http404(f"job {job.uuid} is not shared with {grantee}")
        job_share_revoke(share=share, user=request.user)
        return Response(envelope({"message": f"share of job {job.uuid} with {grantee} revoked"}))
