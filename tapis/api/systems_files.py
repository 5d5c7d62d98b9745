"""Tapis' Systems and Files services, read-only, under ``/api/tapis/v3/`` (docs/tapis.md,
"Systems and Files"):

- ``GET /v3/systems``, ``GET /v3/systems/{id}``: the clusters as execution systems and the
  archive of job outputs as ``portal-archive`` (tapis.systems);
- ``GET /v3/files/ops/portal-archive/{path}`` (listFiles) and
  ``GET /v3/files/content/portal-archive/{path}`` (getContents): the archive laid out as
  ``jobs/<uuid>/outputs/...``, the jobs being those the caller sees in full (their projects'
  and the ones shared with them: the job selectors' rule); inside a job's outputs the jobs'
  own outputs service reads, so nothing outside the job's folder is ever listed or sent.
"""

from __future__ import annotations

import fnmatch

from django.db.models import Q, QuerySet
from django.http import Http404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from accounts.permissions import may_view_all_jobs
from core.api.common import parse_bool
from core.api.openapi import refusal
from core.api_errors import BadRequest
from core.timefmt import utc_z
from jobs.execution.outputs import job_output_response, job_outputs_list
from jobs.models import Job
from jobs.selectors import job_list_not_deleted, job_list_visible_to, project_ids_of
from jobs.states import FINISHED
from tapis.api.outputs import file_info
from tapis.api.serializers import TapisFileListEnvelope, envelope_of
from tapis.api.views import TAG, TapisAPIView, int_param, tapis_job
from tapis.shapes import ARCHIVE_SYSTEM, envelope
from tapis.systems import system_get, system_list

SYSTEMS_LIMIT_MAX = 1000
FILES_LIMIT_DEFAULT = 1000
FILES_LIMIT_MAX = 1000
PATTERN_MAX = 256
JOBS_DIR, OUTPUTS_DIR = "jobs", "outputs"
CONTENT_BASE = f"/api/tapis/v3/files/content/{ARCHIVE_SYSTEM}/"


# --- the schema's shapes ----------------------------------------------------------------------


class TapisCapabilitySerializer(serializers.Serializer):
    category = serializers.CharField()
    name = serializers.CharField()
    datatype = serializers.CharField()
    precedence = serializers.IntegerField()
    value = serializers.CharField()


class TapisSystemSerializer(serializers.Serializer):
    """Tapis' ``TapisSystem``: the fields the portal has a value for (null otherwise)."""

    tenant = serializers.CharField()
    id = serializers.CharField(help_text='a cluster id ("1") or portal-archive')
    description = serializers.CharField()
    systemType = serializers.ChoiceField(choices=["LINUX"])
    owner = serializers.CharField(allow_null=True)
    host = serializers.CharField(allow_null=True)
    enabled = serializers.BooleanField(help_text="a slave of the cluster is online and accepting")
    effectiveUserId = serializers.CharField(allow_null=True)
    defaultAuthnMethod = serializers.CharField(allow_null=True)
    rootDir = serializers.CharField(allow_null=True)
    canExec = serializers.BooleanField()
    canRunBatch = serializers.BooleanField()
    jobRuntimes = serializers.ListField(child=serializers.DictField(), allow_null=True)
    jobWorkingDir = serializers.CharField(allow_null=True)
    jobCapabilities = TapisCapabilitySerializer(many=True)
    tags = serializers.ListField(child=serializers.CharField())
    notes = serializers.DictField(help_text="the cluster's slaves and what they offer")
    isPublic = serializers.BooleanField()
    deleted = serializers.BooleanField()
    created = serializers.CharField(allow_null=True)
    updated = serializers.CharField(allow_null=True)


TapisSystemEnvelope = envelope_of("SystemEnvelope", TapisSystemSerializer())
TapisSystemListEnvelope = envelope_of(
    "SystemListEnvelope", TapisSystemSerializer(many=True), metadata=True
)


# --- Systems ----------------------------------------------------------------------------------


class SystemListView(TapisAPIView):
    @extend_schema(
        operation_id="tapis_systems_list",
        tags=[TAG],
        summary="getSystems: the clusters and the archive",
        description="Every cluster as an execution system (its id is the cluster id a job's "
        "execSystemId names), then portal-archive, where job outputs are kept. Read-only.",
        parameters=[
            OpenApiParameter("limit", int, description=f"at most {SYSTEMS_LIMIT_MAX}"),
            OpenApiParameter("skip", int, description="how many to skip first"),
            OpenApiParameter("computeTotal", bool, description="add metadata.totalCount"),
        ],
        responses={200: TapisSystemListEnvelope, 400: refusal("limit or skip out of range")},
    )
    def get(self, request):
        limit = int_param(request, "limit", SYSTEMS_LIMIT_MAX, SYSTEMS_LIMIT_MAX)
        skip = int_param(request, "skip", 0)
        systems = system_list()
        items = systems[skip : skip + limit]
        metadata = {"recordCount": len(items), "recordLimit": limit, "recordsSkipped": skip}
        if parse_bool(request.query_params.get("computeTotal"), "computeTotal"):
            metadata["totalCount"] = len(systems)
        return Response(envelope(items, "systems listed", metadata=metadata))


class SystemDetailView(TapisAPIView):
    @extend_schema(
        operation_id="tapis_systems_get",
        tags=[TAG],
        summary="getSystem: one cluster, or the archive",
        description="A cluster by its id (what submitJob's execSystemId names), or portal-archive.",
        responses={200: TapisSystemEnvelope},
    )
    def get(self, request, system_id):
        system = system_get(system_id)
        if system is None:
            raise Http404(f"no system {system_id!r} (GET /api/tapis/v3/systems lists them)")
        return Response(envelope(system, "system retrieved"))


# --- Files on the archive ---------------------------------------------------------------------


def _parts(system_id: str, path: str) -> list[str]:
    """The archive path's segments; 404 for another system, 400 for '.' and '..'."""
    if system_id != ARCHIVE_SYSTEM:
        raise Http404(
            f"no files on system {system_id!r}: the portal serves the archive of job outputs, "
            f"{ARCHIVE_SYSTEM}"
        )
    parts = [part for part in (path or "").split("/") if part]
    if any(part in (".", "..") or "\x00" in part for part in parts):
        raise BadRequest("invalid path", ["path: must not contain '.', '..' or NUL"])
    return parts


def archive_jobs(user) -> QuerySet[Job]:
    """The ended jobs whose outputs ``user`` may read: their projects' and the ones shared with
    them (``job_sees_full`` as a query), all for those who see every job; newest first."""
    jobs = job_list_not_deleted(job_list_visible_to(user)).filter(status__in=FINISHED)
    if not may_view_all_jobs(user):
        jobs = jobs.filter(Q(project_id__in=project_ids_of(user)) | Q(shared_with_viewer=True))
    return jobs.order_by("-created", "-id")


def _folder(name: str, path: str, modified) -> dict:
    return {
        "mimeType": None,
        "type": "dir",
        "owner": None,
        "group": None,
        "nativePermissions": None,
        "url": f"tapis://{ARCHIVE_SYSTEM}/{path}",
        "lastModified": utc_z(modified),
        "name": name,
        "path": path,
        "size": 0,
    }


def _matches(pattern: str | None):
    if not pattern:
        return lambda name: True
    if pattern.startswith("regex:"):
        raise BadRequest("invalid query parameter pattern", ["pattern: regex: is not supported"])
    if len(pattern) > PATTERN_MAX:
        raise BadRequest(
            "invalid query parameter pattern",
            [f"pattern: at most {PATTERN_MAX} characters"],
        )
    return lambda name: fnmatch.fnmatchcase(name, pattern)


class FileListView(TapisAPIView):
    @extend_schema(
        operation_id="tapis_files_list",
        tags=[TAG],
        summary="listFiles: a folder of the archive",
        description=f"On {ARCHIVE_SYSTEM}: the top holds `jobs`; `jobs` the ended jobs whose "
        "outputs you may read (your projects' and those shared with you), newest first; "
        "`jobs/<uuid>` its `outputs`; below that the job's archived outputs (`recurse=true` "
        "walks them). `pattern` keeps the names a glob matches.",
        parameters=[
            OpenApiParameter("limit", int, description=f"default and most {FILES_LIMIT_DEFAULT}"),
            OpenApiParameter("offset", int, description="how many to skip first"),
            OpenApiParameter("recurse", bool, description="inside a job's outputs: every level"),
            OpenApiParameter("pattern", str, description="a glob on the names (no regex:)"),
        ],
        responses={
            200: TapisFileListEnvelope,
            400: refusal("a path with '.' or '..', or a query parameter out of range"),
            403: refusal("only members of the job's project and its sharees read its outputs"),
        },
    )
    def get(self, request, system_id, path=""):
        parts = _parts(system_id, path)
        limit = int_param(request, "limit", FILES_LIMIT_DEFAULT, FILES_LIMIT_MAX)
        offset = int_param(request, "offset", 0)
        keep = _matches(request.query_params.get("pattern"))
        if not parts:
            items = [_folder(JOBS_DIR, JOBS_DIR, None)]
        elif parts == [JOBS_DIR]:
            # Folders per job: the glob applies to the uuid, in the query's own order.
            jobs = archive_jobs(request.user)[offset : offset + limit]
            items = [_folder(str(job.uuid), f"{JOBS_DIR}/{job.uuid}", job.ended_at) for job in jobs]
            offset = 0
        elif parts[0] != JOBS_DIR or (len(parts) > 2 and parts[2] != OUTPUTS_DIR):
            raise Http404(f"no {'/'.join(parts)} on {ARCHIVE_SYSTEM}: its folders are jobs/<uuid>")
        elif len(parts) == 2:
            job = tapis_job(request, parts[1])
            items = [_folder(OUTPUTS_DIR, f"{JOBS_DIR}/{job.uuid}/{OUTPUTS_DIR}", job.ended_at)]
        else:
            job = tapis_job(request, parts[1])
            recurse = parse_bool(request.query_params.get("recurse"), "recurse")
            entries = job_outputs_list(
                job=job, user=request.user, path="/".join(parts[3:]), recursive=recurse
            )
            prefix = f"{JOBS_DIR}/{job.uuid}/{OUTPUTS_DIR}/"
            base = request.build_absolute_uri(CONTENT_BASE)
            items = [
                file_info({**entry, "path": prefix + entry["path"]}, base) for entry in entries
            ]
        items = [item for item in items if keep(item["name"])][offset : offset + limit]
        return Response(envelope(items, f"{len(items)} entries of {ARCHIVE_SYSTEM}"))


class FileContentView(TapisAPIView):
    @extend_schema(
        operation_id="tapis_files_content",
        tags=[TAG],
        summary="getContents: a file of a job's archived outputs, or a folder as a zip",
        description=f"On {ARCHIVE_SYSTEM}, below `jobs/<uuid>/outputs`: a file's bytes "
        "(application/octet-stream), or a folder (or a file with `zip=true`) as a zip. "
        "Within the site's download limit; nothing outside the job's output folder.",
        parameters=[OpenApiParameter("zip", bool, description="a zip even of one file")],
        responses={
            (200, "application/octet-stream"): OpenApiResponse(
                OpenApiTypes.BINARY, description="the file's bytes"
            ),
            (200, "application/zip"): OpenApiResponse(
                OpenApiTypes.BINARY, description="a folder as a zip"
            ),
            400: refusal("a path with '.' or '..', or not inside a job's outputs"),
            403: refusal("only members of the job's project and its sharees read its outputs"),
            413: refusal("more bytes than this site's download limit"),
        },
    )
    def get(self, request, system_id, path=""):
        parts = _parts(system_id, path)
        if len(parts) < 3 or parts[0] != JOBS_DIR or parts[2] != OUTPUTS_DIR:
            raise BadRequest(
                "invalid path",
                ["path: a file or folder below jobs/<uuid>/outputs (listFiles shows them)"],
            )
        job = tapis_job(request, parts[1])
        as_zip = parse_bool(request.query_params.get("zip"), "zip")
        response = job_output_response(
            job=job, user=request.user, path="/".join(parts[3:]), as_zip=as_zip
        )
        if response["Content-Type"] != "application/zip":
            # Bytes as they are: tapipy would parse a file served as JSON instead of returning it.
            response["Content-Type"] = "application/octet-stream"
        return response
