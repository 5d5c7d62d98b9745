"""OpenPAI routes of the portal's API (docs/api.md, docs/openpai.md): the roles x tasks of a
multi-task job (GET /api/portal/gangs/<uuid>/), its resubmit as a copy, and the config a job
was submitted from (GET /api/portal/jobs/<uuid>/openpai/).

Visible to whoever may see its tasks (the job selectors own visibility); a gang is found by
its own uuid or by the uuid of any of its tasks.
"""

from __future__ import annotations

from django.db.models import Q
from django.http import Http404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from core.api.common import PortalAPIView, parse_uuid_or_404, read_body, read_json_object
from core.api.openapi import refusal
from core.errors import NotAllowed
from gangs.api.serializers import GangCopySerializer, GangResubmitRequestSerializer, GangSerializer
from gangs.models import JobGang
from gangs.resubmit import gang_resubmit
from gangs.summary import gang_summary
from jobs.api.views import PORTAL_TAG, get_visible_job
from jobs.selectors import job_list_visible_to, job_sees_full
from jobs.spec import FieldError, SpecError

_MEMBERS_ONLY = refusal("only members of the job's project (and admins) see this")


def _visible_gang(request, gang_id: str) -> JobGang:
    """The gang ``gang_id`` names (its uuid or a task's), if the caller sees its tasks in full."""
    wanted = parse_uuid_or_404(gang_id)
    task = (
        job_list_visible_to(request.user)
        .filter(Q(gang__uuid=wanted) | Q(uuid=wanted, gang__isnull=False))
        .select_related("gang")
        .first()
    )
    if task is None:
        raise Http404("no such multi-task job")
    if not job_sees_full(request.user, task):
        raise NotAllowed("only members of the job's project may see its tasks")
    assert task.gang_id is not None  # filtered: a gang task
    return JobGang.objects.get(pk=task.gang_id)


class GangDetailView(PortalAPIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(
        operation_id="portal_gang_get",
        tags=["portal"],
        summary="A multi-task OpenPAI job: roles x tasks of its attempt, and its attempts",
        description="The job (named by its own uuid or any task's) as its roles x tasks of the "
        "current attempt, each task's state, slave, ports and exit code, its ended attempts "
        "and its copies (docs/openpai.md).",
        responses={200: GangSerializer, 403: _MEMBERS_ONLY},
    )
    def get(self, request, gang_id: str):
        return Response(gang_summary(_visible_gang(request, gang_id)))


class GangResubmitView(PortalAPIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(
        operation_id="portal_gang_resubmit",
        tags=["portal"],
        summary="Resubmit a multi-task OpenPAI job as a copy",
        description=(
            'Body (optional): {"jobName": "..."}; default `<jobName>-copy`, `-copy2`, ... '
            "The copy is submitted with every check of a new submission, in the job's project "
            "(403 for a user who may not submit there); answers 201 with the new job's roles x "
            "tasks, `copyOf` naming the old one, and `firstTask`: the uuid of its first task."
        ),
        request=GangResubmitRequestSerializer,
        examples=[OpenApiExample("a named copy", {"jobName": "pai-again"}, request_only=True)],
        responses={
            201: GangCopySerializer,
            400: refusal("an unknown key or a jobName that is not valid or already taken"),
            403: refusal("you may not see the job's tasks or submit in its project"),
        },
    )
    def post(self, request, gang_id: str):
        gang = _visible_gang(request, gang_id)
        body = read_body(request)
        options = read_json_object(request) if body.strip() else {}
        if not isinstance(options, dict):
            raise SpecError([FieldError("(document)", "must be a JSON object")])
        unknown = sorted(set(options) - {"jobName"})
        errors = [FieldError(key, "is not a known key (only jobName)") for key in unknown]
        job_name = options.get("jobName")
        if job_name is not None and not isinstance(job_name, str):
            errors.append(FieldError("jobName", "must be a string"))
        if errors:
            raise SpecError(errors)
        first = gang_resubmit(user=request.user, gang=gang, job_name=job_name)
        assert first.gang_id is not None  # the first task of the copy
        copy = JobGang.objects.get(pk=first.gang_id)
        return Response({**gang_summary(copy), "firstTask": str(first.uuid)}, status=201)


class JobOpenPaiView(PortalAPIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(
        operation_id="portal_job_openpai",
        tags=[PORTAL_TAG],
        summary="The OpenPAI config a job was submitted from (extras included)",
        description="The canonical OpenPAI config (docs/openpai.md) of a job submitted from "
        "one, image credentials removed; 404 for a job submitted otherwise.",
        responses={
            200: OpenApiResponse(OpenApiTypes.OBJECT, description="an OpenPAI job config"),
            403: _MEMBERS_ONLY,
        },
    )
    def get(self, request, job_id: str):
        job = get_visible_job(request, job_id)
        if not job_sees_full(request.user, job):
            raise NotAllowed("only members of the job's project may see its log and history")
        if job.openpai_config is None:
            raise Http404("this job was not submitted from an OpenPAI config")
        return Response(job.openpai_config)
