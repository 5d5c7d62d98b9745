"""GPULab v4.0 job endpoints, as the real ``gpulab-cli`` uses them (docs/gpulab-format.md,
section 4), and the portal's own job endpoints (convert, explain, array submissions).

Visibility comes from ``jobs.selectors``; permissions to act are checked by ``jobs.user_actions.services``
(their errors become 403/409 in ``core.api_errors``); the JSON comes from ``jobs.api.gpulab_json``.
"""

from __future__ import annotations

import re
from datetime import timedelta

from django.conf import settings
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from accounts.models import Project
from accounts.permissions import may_delete_all_jobs
from clusters.models import Cluster
from core.api.common import (
    PortalAPIView,
    parse_bool,
    parse_uuid_or_404,
    read_body,
    read_json_object,
    read_text,
)
from core.api.openapi import refusal
from core.api_errors import BadRequest
from core.errors import NotAllowed
from jobs.api.filters import job_filter_from_query, paginate, sort_order
from jobs.api.gpulab_json import gpulab_list_queryset, job_to_gpulab, listed_jobs
from jobs.api.serializers import (
    ArraySubmittedSerializer,
    ClusterUtilisationSerializer,
    ConvertedJobSerializer,
    DebugEventSerializer,
    ExplanationSerializer,
    JobListSerializer,
    JobMetricsSerializer,
    JobSerializer,
    debug_event,
    explanation,
)
from jobs.execution.logs import job_log_range
from jobs.execution.metrics import cluster_utilisation_series, job_samples_series
from jobs.models import Job
from jobs.selectors import job_list_visible_to, job_sees_full, job_visible_to, sole_project_of
from jobs.spec import parse_any_document
from jobs.spec.array import expand_array
from jobs.spec.document import GPULAB, document_kind_named
from jobs.spec.images import redact_image
from jobs.submit import idempotency
from jobs.submit.estimates import start_estimate_json
from jobs.user_actions import services
from jobs.user_actions.registry import ACTION_BY_API_STATUS, ACTIONS, whole_gang_info

TAG = "GPULab v4.0"
PORTAL_TAG = "portal"
# A job document for the schema's examples (docs/gpulab-format.md): one GPU for a minute.
JOB_EXAMPLE = {
    "name": "hello",
    "description": "prints a greeting",
    "request": {
        "resources": {"clusterId": 1, "gpus": 1, "cpus": 2, "cpuMemoryGb": 2},
        "docker": {"image": "debian:stable", "command": "echo hello"},
        "scheduling": {"maxDuration": "1 minute"},
    },
}
# Refusals several operations share (core.api.openapi gives them the error body).
BAD_QUERY = refusal("a query parameter that is not valid: each problem is named")
MEMBERS_ONLY = refusal("only members of the job's project (and admins) see this")
_PROJECT_URN_RE = re.compile(r"^urn:publicid:IDN\+(?P<authority>[^+]+)\+project\+(?P<name>[^+]+)$")
_RANGE_RE = re.compile(r"^\s*bytes\s*=\s*(\d{1,18})\s*-\s*(\d{0,18})\s*$", re.IGNORECASE)


def get_visible_job(request, job_id: str) -> Job:
    """The job with that uuid if the caller may see it (full or sanitised); 404 otherwise."""
    job = job_visible_to(request.user, parse_uuid_or_404(job_id))
    if job is None:
        raise Http404("no such job")
    return job


def _require_full_view(user, job: Job) -> None:
    if not job_sees_full(user, job):
        raise NotAllowed("only members of the job's project may see its log and history")


# --- jobs ---------------------------------------------------------------------------------


def _project_for_submit(user, document: dict) -> Project:
    """The project a submission names in ``owner.projectUrn`` (a URN, or a project name), or
    the caller's only project when it names none."""
    owner = document.get("owner")
    if owner is not None and not isinstance(owner, dict):
        raise BadRequest("invalid job", ['owner: must be an object like {"projectUrn": ...}'])
    value = None
    if owner:
        value = owner.get("projectUrn", owner.get("project_urn"))
    return project_named(user, value, field="owner.projectUrn")


def project_named(user, value, *, field: str) -> Project:
    """The project ``value`` names (a URN or a name; the caller's only project when None);
    400 on ``field`` otherwise."""
    if value is None:
        sole, count = sole_project_of(user)
        if sole is not None:
            return sole
        why = "you are a member of several projects" if count else "you are in no project"
        raise BadRequest("invalid job", [f"{field}: is required ({why})"])
    if not isinstance(value, str) or not value.strip():
        raise BadRequest("invalid job", [f"{field}: must be a project URN or name"])
    value = value.strip()
    match = _PROJECT_URN_RE.match(value)
    name = match.group("name") if match else value
    project = Project.objects.filter(name=name).first()
    if project is None:
        raise BadRequest("invalid job", [f"{field}: no project {name!r}"])
    return project


class JobListView(PortalAPIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(
        operation_id="gpulab_jobs_list",
        tags=[TAG],
        summary="List jobs (own projects' jobs in full, others sanitised)",
        description=(
            "Every job you may see, newest first unless `sort` says otherwise, one page at a "
            "time. Jobs of your projects (and jobs shared with you) come in full; others "
            "sanitised, as GPULab does. The state groups and the comma lists filter."
        ),
        parameters=[
            OpenApiParameter(g, OpenApiTypes.BOOL, description=f"state group {g}")
            for g in ("pending", "running", "finished", "deleted")
        ]
        + [
            OpenApiParameter(p, OpenApiTypes.STR, description="comma list")
            for p in (
                "allowed_states",
                "cluster_id",
                "user_urn",
                "user_name",
                "project_urn",
                "project_name",
                "assigned_slave_name",
                "reservation_id",
                "sort",
            )
        ]
        + [
            OpenApiParameter("interactive", OpenApiTypes.BOOL),
            OpenApiParameter("page", OpenApiTypes.INT, description="from 1"),
            OpenApiParameter("page_size", OpenApiTypes.INT, description="default 10, max 200"),
        ],
        responses={200: JobListSerializer, 400: BAD_QUERY},
    )
    def get(self, request):
        params = request.query_params
        job_filter = job_filter_from_query(params)
        filtered = job_filter.apply(job_list_visible_to(request.user), viewer=request.user)
        rows, paging = paginate(
            gpulab_list_queryset(filtered.order_by(*sort_order(params))),
            params,
            # job_list_visible_to lists every job to every logged-in user (sanitised or not)
            count=lambda: job_filter.count(lambda: filtered, of_every_job=True),
        )
        items = [job_to_gpulab(job, viewer=request.user) for job in listed_jobs(rows)]
        return Response({"items": items, **paging})

    @extend_schema(
        operation_id="gpulab_jobs_submit",
        tags=[TAG],
        summary="Submit a job; answers its uuid as text",
        description=(
            "The body is a GPULab v2 (or v1) job document or an OpenPAI config "
            "(docs/gpulab-format.md, docs/openpai.md); `owner.projectUrn` names the project "
            "unless you are in only one. The job is checked at once (every problem named with "
            "its path) and queued; the answer is its uuid as plain text, with `Location`."
        ),
        parameters=[
            OpenApiParameter("hold", OpenApiTypes.BOOL, description="submit ONHOLD"),
            OpenApiParameter(
                "Idempotency-Key",
                OpenApiTypes.STR,
                location=OpenApiParameter.HEADER,
                description="a retry with the same key and body answers the first answer "
                "(no second job); the same key with another body: 422",
            ),
        ],
        request={"application/json": OpenApiTypes.OBJECT},
        examples=[OpenApiExample("one GPU for a minute", JOB_EXAMPLE, request_only=True)],
        responses={
            (201, "text/plain"): OpenApiResponse(
                OpenApiTypes.STR,
                description="the job's uuid (a retry with the same Idempotency-Key: the first "
                "answer again, with Idempotent-Replayed: true)",
            ),
            400: refusal("an invalid document: every problem is named with its path"),
            403: refusal("you may not submit in that project"),
            422: refusal("this Idempotency-Key was used for another request"),
        },
    )
    def post(self, request):
        hold = parse_bool(request.query_params.get("hold"), "hold")
        key = idempotency.idempotency_key_from(request)
        body = read_body(request)
        digest = idempotency.request_digest(
            method="POST", query=request.META.get("QUERY_STRING", ""), body=body
        )

        def submit() -> idempotency.SubmitAnswer:
            document = read_json_object(request)
            project = _project_for_submit(request.user, document)
            job = services.job_submit(
                user=request.user, project=project, document=document, hold=hold
            )
            return idempotency.SubmitAnswer(201, str(job.uuid), job)

        # With an Idempotency-Key, a retry answers the first submission's answer (no new job).
        answer = idempotency.submit_once(user=request.user, key=key, digest=digest, submit=submit)
        response = HttpResponse(
            answer.body, status=answer.status, content_type="text/plain; charset=utf-8"
        )
        if answer.job is not None:
            response["Location"] = request.build_absolute_uri(
                reverse("gpulab-job-detail", args=[str(answer.job.uuid)])
            )
        if answer.replayed:
            response["Idempotent-Replayed"] = "true"
        return response


class JobDetailView(PortalAPIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(
        operation_id="gpulab_job_get",
        tags=[TAG],
        summary="One job",
        description="The job in GPULab's Job shape: in full for members of its project (and "
        "those it is shared with), sanitised for others.",
        responses={200: JobSerializer},
    )
    def get(self, request, job_id: str):
        job = get_visible_job(request, job_id)
        return Response(job_to_gpulab(job, viewer=request.user))

    @extend_schema(
        operation_id="gpulab_job_delete",
        tags=[TAG],
        summary="Revoke a job that has not run; finished=true to remove an ended one",
        description=(
            "A job that has not started is revoked (CANCELLED, then DELETED); an ended one is "
            "marked DELETED with `finished=true`. Admins may remove the row (`real`) of a job "
            "in any state (`force`). A task of a multi-task job acts on the whole job "
            "(X-Portal-Info says so)."
        ),
        parameters=[
            OpenApiParameter("finished", OpenApiTypes.BOOL, description="also allow an ended job"),
            OpenApiParameter("real", OpenApiTypes.BOOL, description="remove the row (admin)"),
            OpenApiParameter(
                "force", OpenApiTypes.BOOL, description="any state (admin, with real)"
            ),
        ],
        request=None,
        responses={
            204: None,
            400: BAD_QUERY,
            403: refusal("not your job, or real/force without admin powers"),
            409: refusal("the job's state does not allow it (running, or ended without finished)"),
        },
    )
    def delete(self, request, job_id: str):
        finished = parse_bool(request.query_params.get("finished"), "finished")
        real = parse_bool(request.query_params.get("real"), "real")
        force = parse_bool(request.query_params.get("force"), "force")
        job = get_visible_job(request, job_id)
        if (real or force) and not may_delete_all_jobs(request.user):
            raise NotAllowed("'real' and 'force' deletion are for admins only")
        # Through the action registry: a task of a gang deletes the whole gang (unless real).
        ACTIONS["delete"].run(job=job, user=request.user, finished=finished, real=real, force=force)
        response = Response(status=204)
        whole = None if real else whole_gang_info(job, "deleted")
        if whole is not None:  # a task of a gang: the whole job was acted on
            response["X-Portal-Info"] = whole
        return response


class JobStatusView(PortalAPIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(
        operation_id="gpulab_job_status_put",
        tags=[TAG],
        summary="Cancel, halt, hold or release a job",
        description=(
            "The plain-text body names the wanted state: CANCELLED, MUSTHALT, ONHOLD or "
            "QUEUED (release). Answers the job afterwards; a task of a multi-task job acts on "
            "the whole job (X-Portal-Info says so)."
        ),
        request={"text/plain": OpenApiTypes.STR},
        examples=[
            OpenApiExample("cancel", "CANCELLED", request_only=True, media_type="text/plain"),
            OpenApiExample("hold", "ONHOLD", request_only=True, media_type="text/plain"),
        ],
        responses={
            200: JobSerializer,
            400: refusal("not one of CANCELLED, MUSTHALT, ONHOLD, QUEUED"),
            403: refusal("you may not act on this job"),
            409: refusal("the job's state does not allow it"),
        },
    )
    def put(self, request, job_id: str):
        text = read_text(request).strip().strip('"').strip().upper()
        job = get_visible_job(request, job_id)
        action = ACTION_BY_API_STATUS.get(text)
        if action is None:
            shown = text[:40] or "(empty)"
            known = ", ".join(ACTION_BY_API_STATUS)
            raise BadRequest("invalid status", [f"(body): must be one of {known}, not {shown}"])
        action.run(job=job, user=request.user)
        job.refresh_from_db()
        response = Response(job_to_gpulab(job, viewer=request.user))
        whole = whole_gang_info(job, f"{text} applied to")
        if whole is not None:  # a task of a gang: the whole job was acted on (gangs/)
            response["X-Portal-Info"] = whole
        return response


def _parse_range(header: str | None) -> tuple[int, int | None] | None:
    """``bytes=N-`` (or ``bytes=N-M``) -> (N, M or None); anything else -> None (ignored)."""
    if not header:
        return None
    match = _RANGE_RE.match(header)
    if match is None:
        return None
    start = int(match.group(1))
    end = int(match.group(2)) if match.group(2) else None
    if end is not None and end < start:
        return None
    return start, end


class JobLogView(PortalAPIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(
        operation_id="gpulab_job_log",
        tags=[TAG],
        summary="The job's log; Range: bytes=N- for what follows offset N",
        description=(
            "200 with the whole log (possibly empty) without Range; 206 with "
            "`Content-Range: bytes A-END/TOTAL` where END is the offset where the next read "
            "starts (send it as the next N); 204 when there is no new data past N. Never 416."
        ),
        parameters=[OpenApiParameter("Range", OpenApiTypes.STR, OpenApiParameter.HEADER)],
        responses={
            (200, "text/plain"): OpenApiTypes.STR,
            (206, "text/plain"): OpenApiTypes.STR,
            204: None,
            403: MEMBERS_ONLY,
        },
    )
    def get(self, request, job_id: str):
        job = get_visible_job(request, job_id)
        _require_full_view(request.user, job)
        wanted = _parse_range(request.headers.get("Range"))
        start = wanted[0] if wanted else 0
        data, total = job_log_range(job, start)
        if wanted is None:
            # Even when empty: gpulab-cli (without -f) loops until it sees a 200 or 206.
            response = HttpResponse(data, status=200, content_type="text/plain; charset=utf-8")
        elif start >= total or not data:
            response = HttpResponse(status=204)
        else:
            if wanted[1] is not None:
                data = data[: wanted[1] - start + 1]
            response = HttpResponse(data, status=206, content_type="text/plain; charset=utf-8")
            response["Content-Range"] = f"bytes {start}-{start + len(data)}/{total}"
        response["Accept-Ranges"] = "bytes"
        response["Cache-Control"] = "no-store"
        return response


class JobDebugView(PortalAPIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(
        operation_id="gpulab_job_debug",
        tags=[TAG],
        summary="The job's event history",
        description="Every status change and message of the job, oldest first (GPULab's "
        "debug events).",
        responses={200: DebugEventSerializer(many=True), 403: MEMBERS_ONLY},
    )
    def get(self, request, job_id: str):
        job = get_visible_job(request, job_id)
        _require_full_view(request.user, job)
        job_uuid = str(job.uuid)
        events = job.events.order_by("time", "id")
        return Response([debug_event(event, job_uuid=job_uuid) for event in events])


# --- portal job endpoints -----------------------------------------------------------------


class JobExplainView(PortalAPIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(
        operation_id="portal_job_explain",
        tags=[PORTAL_TAG],
        summary="Why a job is (still) in its state: the scheduler's explanations",
        description="For a queued job, why each cluster and slave cannot start it now and "
        "when it may start (docs/scheduling.md); for an ended one, why it ended (its "
        "project's members only).",
        responses={200: ExplanationSerializer},
    )
    def get(self, request, job_id: str):
        job = get_visible_job(request, job_id)
        body = explanation(job)
        full = job_sees_full(request.user, job)
        if not full:
            body["end_reason"] = None
        body["start_estimate"] = start_estimate_json(job=job, full=full)
        return Response(body)


class ConvertView(PortalAPIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(
        operation_id="portal_convert",
        tags=[PORTAL_TAG],
        summary="Validate a v1/v2 document or an OpenPAI config; answer its canonical form",
        description=(
            "Checks the document as a submission would, without submitting: a v1 or v2 job "
            "document comes back as the canonical v2 document, an OpenPAI config as the "
            "canonical config (X-Converted-From names what it was)."
        ),
        request={"application/json": OpenApiTypes.OBJECT},
        examples=[OpenApiExample("a v2 document", JOB_EXAMPLE, request_only=True)],
        responses={
            200: OpenApiResponse(
                ConvertedJobSerializer, description="a v2 job document, or an OpenPAI config"
            ),
            400: refusal("an invalid document: every problem is named with its path"),
        },
    )
    def post(self, request):
        parsed = parse_any_document(read_body(request), defaults=services.spec_defaults())
        canonical = parsed.document
        kind = document_kind_named(parsed.kind)
        if kind is not None:  # a registered kind's canonical form (an OpenPAI config)
            response = Response(kind.shown(canonical))
            response["X-Converted-From"] = kind.name
            return response
        assert parsed.kind == GPULAB
        docker = canonical["request"]["docker"]
        docker["image"] = redact_image(docker["image"], member=True)
        response = Response(canonical)
        response["X-Converted-From"] = "v1" if parsed.was_v1 else "v2"
        return response


class JobMetricsView(PortalAPIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(
        operation_id="portal_job_metrics",
        tags=[PORTAL_TAG],
        summary="A job's resource samples (CPU, memory, network, GPU load) as chart columns",
        description="What the job used, sampled while it ran (docs/metrics.md).",
        responses={200: JobMetricsSerializer, 403: MEMBERS_ONLY},
    )
    def get(self, request, job_id: str):
        job = get_visible_job(request, job_id)
        _require_full_view(request.user, job)
        return Response(job_samples_series(job))


class ClusterUtilisationView(PortalAPIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(
        operation_id="portal_cluster_utilisation",
        tags=[PORTAL_TAG],
        summary="What a cluster's running jobs used over the last hours",
        description="Per 10-minute bucket (hourly beyond 48 hours), the mean over the bucket "
        "of what the cluster's jobs held and used, each job weighted by how long it ran in the "
        "bucket: CPU cores busy, memory in GB, GPUs held (from the runs) and GPUs busy. The "
        "last entry is the instant at the end of the window.",
        parameters=[OpenApiParameter("hours", int, description="1 to 168; default 24")],
        responses={200: ClusterUtilisationSerializer, 400: BAD_QUERY},
    )
    def get(self, request, cluster_id: int):
        get_object_or_404(Cluster, pk=cluster_id)
        hours = request.query_params.get("hours", "24")
        if not hours.isdigit() or not 1 <= int(hours) <= 168:
            raise BadRequest("invalid query", ["hours: must be a whole number from 1 to 168"])
        until = timezone.now()
        since = until - timedelta(hours=int(hours))
        bucket_s = 600 if int(hours) <= 48 else 3600
        return Response(
            cluster_utilisation_series(
                cluster_id=cluster_id, since=since, until=until, bucket_s=bucket_s
            )
        )


# --- POST /api/portal/jobs/array: many jobs in one request ----------------------------------
# (docs/api.md, "Array submissions"). The body is ``{"jobs": [doc, ...]}`` or ``{"template": doc, "variations": [patch, ...]}``, with an
# optional ``project``; every job is checked as a single submission is, and either all are
# written in one transaction or none (400 with one error per problem, naming the item's index).


class JobArrayView(PortalAPIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(
        operation_id="portal_jobs_array_submit",
        tags=[PORTAL_TAG],
        summary="Submit many jobs at once",
        description=(
            'Body: `{"jobs": [doc, ...]}` or `{"template": doc, "variations": [patch, ...]}` '
            "(each variation merged into the template as a JSON merge patch, then `${index}` "
            "in strings replaced by the variation's index), plus an optional `project` (name "
            f"or URN). At most PORTAL_ARRAY_MAX_JOBS ({settings.PORTAL_ARRAY_MAX_JOBS}) jobs. "
            "All or nothing: a 400 lists every problem as `jobs[3].request...: rule`."
        ),
        parameters=[OpenApiParameter("hold", OpenApiTypes.BOOL, description="submit ONHOLD")],
        request={"application/json": OpenApiTypes.OBJECT},
        examples=[
            OpenApiExample(
                "a sweep of three",
                {
                    "template": {**JOB_EXAMPLE, "name": "hello-${index}"},
                    "variations": [{}, {"request": {"resources": {"cpus": 1}}}, {}],
                },
                request_only=True,
            )
        ],
        responses={
            201: ArraySubmittedSerializer,
            400: refusal("invalid documents: every problem is named with its item's index"),
            403: refusal("you may not submit in that project"),
        },
    )
    def post(self, request):
        hold = parse_bool(request.query_params.get("hold"), "hold")
        body = read_json_object(request)
        documents, name = expand_array(body, max_jobs=settings.PORTAL_ARRAY_MAX_JOBS)
        project = project_named(request.user, body.get("project"), field="project")
        jobs = services.job_submit_many(
            user=request.user, project=project, documents=documents, hold=hold, name=name
        )
        return Response(
            {"uuids": [str(job.uuid) for job in jobs], "arrayId": str(jobs[0].array_id)},
            status=201,
        )
