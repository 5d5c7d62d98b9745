"""``POST /api/portal/jobs/array``: many jobs in one request (docs/api.md, "Array submissions").

The body is ``{"jobs": [doc, ...]}`` or ``{"template": doc, "variations": [patch, ...]}``, with an
optional ``project``; every job is checked as a single submission is, and either all are
written in one transaction or none (400 with one error per problem, naming the item's index).
"""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from core.api.common import PortalAPIView, parse_bool, read_json_object
from core.api.openapi import refusal
from jobs.api.views import JOB_EXAMPLE, PORTAL_TAG, project_named
from jobs.spec.array import expand_array
from jobs.user_actions import services


class ArraySubmittedSerializer(serializers.Serializer):
    uuids = serializers.ListField(child=serializers.CharField(), help_text="in the items' order")


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
        return Response({"uuids": [str(job.uuid) for job in jobs]}, status=201)
