"""OpenPAI's REST API (docs/openpai.md, "OpenPAI's REST API"), as its clients call it:

- ``POST /api/v1/jobs`` (and ``/api/v1/user/{user}/jobs``): a job config of OpenPAI's job
  reference, JSON (the seed's);
- ``POST /api/v2/jobs``: a job protocol v2 (YAML, gangs/protocol_v2.py);
- ``GET /api/v2/jobs``: the caller's OpenPAI jobs (``JobSummary``), newest first;
- ``GET /api/v2/jobs/{user}~{jobName}``: one job (``JobDetail``) with OpenPAI's states and its
  retries;
- ``PUT /api/v2/jobs/{user}~{jobName}/executionType`` ``{"value": "STOP"}``: stop it.

Log in with ``Authorization: Bearer <the portal API token>`` (gangs/api/openpai_auth.py) or any
of the portal's ways. Refusals are OpenPAI's ``{"code", "message"}`` (gangs/middleware.py).
Submitting goes through jobs' one submit (``job_submit``: the OpenPAI document kind), stopping
through the one action registry (the whole gang).
"""

from __future__ import annotations

import yaml
from django.http import Http404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    OpenApiResponse,
    PolymorphicProxySerializer,
    extend_schema,
)
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.settings import api_settings

from core.api.common import PortalAPIView, read_body, read_json_object
from core.api.openapi import refusal
from core.api_errors import BadRequest
from core.errors import Conflict, FieldError, NotAllowed
from gangs.api.openpai_auth import OpenPaiBearerAuthentication
from gangs.api.openpai_serializers import (
    ExecutionTypeSerializer,
    JobDetailSerializer,
    JobSummaryPageSerializer,
    JobSummarySerializer,
    OpenPaiErrorSerializer,
    OpenPaiMessageSerializer,
    OpenPaiSubmittedSerializer,
)
from gangs.openpai_jobs import (
    PAI_STATES,
    PaiJob,
    execution_type,
    job_detail,
    job_state,
    job_summary,
    openpai_job_find,
    openpai_job_list,
)
from gangs.openpai_submit import openpai_name_clash
from gangs.protocol_v2 import PROJECT_EXTRA, paths_back, protocol_load, protocol_to_config
from jobs.api.views import project_named
from jobs.spec import SpecError
from jobs.states import TERMINAL
from jobs.user_actions import services
from jobs.user_actions.registry import ACTIONS

TAG = "OpenPAI"
LIST_LIMIT_DEFAULT = 100
LIST_LIMIT_MAX = 1000
FINAL = ("STOPPED", "SUCCEEDED", "FAILED")
_USER = OpenApiParameter("user", str, OpenApiParameter.PATH, description="the job's owner")
_JOB = OpenApiParameter("job_name", str, OpenApiParameter.PATH, description="the job's name")
# The seed's one-task example (docs/openpai.md), as OpenPAI's clients post it.
V1_EXAMPLE = {
    "jobName": "hello-pai",
    "image": "gpuportal/busybox:latest",
    "taskRoles": [
        {
            "name": "main",
            "taskNumber": 1,
            "cpuNumber": 1,
            "memoryMB": 1024,
            "gpuNumber": 0,
            "command": "echo hello from $PAI_JOB_NAME",
        }
    ],
}
V2_EXAMPLE = """protocolVersion: 2
name: hello-pai-v2
type: job
prerequisites:
  - type: dockerimage
    uri: gpuportal/busybox:latest
    name: image
taskRoles:
  main:
    instances: 1
    dockerImage: image
    resourcePerInstance: {cpu: 1, memoryMB: 1024, gpu: 0}
    commands:
      - echo hello from <% $parameters.who %>
parameters:
  who: OpenPAI
"""


class OpenPaiAPIView(PortalAPIView):
    authentication_classes = [
        OpenPaiBearerAuthentication,
        # api_settings imports the configured dotted paths: classes here (stubs say str).
        *api_settings.DEFAULT_AUTHENTICATION_CLASSES,  # type: ignore[list-item]
    ]
    permission_classes = [IsAuthenticated]
    error_body = OpenPaiErrorSerializer

    def get_authenticate_header(self, request):
        return 'Bearer realm="api"'


def _submitted(request, first, config_name: str) -> Response:
    name = f"{request.user.username}~{config_name}"
    response = Response(
        {
            "message": f"update job {config_name} successfully",
            "name": name,
            "uuid": str(first.uuid),
        },
        status=202,
    )
    response["Location"] = request.build_absolute_uri(f"/api/v2/jobs/{name}")
    return response


def _refuse_taken_name(user, name: object) -> None:
    """OpenPAI answers 409 ConflictJobError for a name the user's jobs already have."""
    if isinstance(name, str) and openpai_name_clash(user, name) is not None:
        raise Conflict(f"Job name {name} already exists.")


def _submit_v1(request, document: dict):
    owner = document.get("owner")
    if owner is not None and not isinstance(owner, dict):
        raise BadRequest("invalid job", ['owner: must be an object like {"projectUrn": ...}'])
    project = project_named(request.user, (owner or {}).get("projectUrn"), field="owner.projectUrn")
    _refuse_taken_name(request.user, document.get("jobName"))
    first = services.job_submit(user=request.user, project=project, document=document)
    return _submitted(request, first, str(document.get("jobName")))


_V1_REQUEST = {"application/json": OpenApiTypes.OBJECT}
_V1_EXAMPLES = [OpenApiExample("the seed's one-task config", V1_EXAMPLE, request_only=True)]
_V1_RESPONSES = {
    202: OpenPaiSubmittedSerializer,
    400: refusal("an invalid config: every problem is named with its path"),
    403: refusal("you may not submit in that project"),
    409: refusal("one of your jobs already has this jobName"),
}


class V1JobSubmitView(OpenPaiAPIView):
    @extend_schema(
        operation_id="openpai_v1_job_submit",
        tags=[TAG],
        summary="Submit an OpenPAI job config (JSON, the job reference's format)",
        description="OpenPAI's v1 submit: the job config of OpenPAI's job reference (the seed's "
        'JSON). A user in several projects adds `"owner": {"projectUrn": "<project>"}`. '
        "Answers 202 with OpenPAI's message, the job's `{user}~{jobName}` and the portal uuid "
        "of its (first) task (docs/openpai.md).",
        request=_V1_REQUEST,
        examples=_V1_EXAMPLES,
        responses=_V1_RESPONSES,
    )
    def post(self, request):
        return _submit_v1(request, read_json_object(request))


class V1UserJobSubmitView(OpenPaiAPIView):
    @extend_schema(
        operation_id="openpai_v1_user_job_submit",
        tags=[TAG],
        summary="Submit an OpenPAI job config as the named user (JSON)",
        description="OpenPAI's `POST /api/v1/user/{user}/jobs`, the same as `POST "
        "/api/v1/jobs`; `user` must be the caller (403 otherwise).",
        parameters=[_USER],
        request=_V1_REQUEST,
        examples=_V1_EXAMPLES,
        responses=_V1_RESPONSES,
    )
    def post(self, request, user: str):
        if user != request.user.username:
            raise NotAllowed(f"you submit as {request.user.username}, not {user}")
        return _submit_v1(request, read_json_object(request))


def _list_int(request, name: str, default: int, maximum: int) -> int:
    value = request.query_params.get(name)
    if value is None or value == "":
        return default
    if not value.isdigit() or int(value) > maximum:
        raise BadRequest(f"invalid query parameter {name}", [f"{name}: must be 0..{maximum}"])
    return int(value)


class V2JobsView(OpenPaiAPIView):
    @extend_schema(
        operation_id="openpai_v2_job_submit",
        tags=[TAG],
        summary="Submit an OpenPAI job protocol v2 (YAML)",
        description="OpenPAI's `createJob`: a job protocol v2 in YAML (parameters, secrets, "
        "prerequisites, task roles with completion, deployments, defaults, extras), read with "
        "YAML's safe loader within the body limit. The project: `extras: "
        '{"gpuportal.project": "<project>"}` for a user in several. Answers 202 with '
        'OpenPAI\'s message (docs/openpai.md, "Protocol v2").',
        # A mapping written in YAML: clients (and the schema's checks) send it YAML-dumped.
        request={"text/yaml": OpenApiTypes.OBJECT},
        examples=[
            OpenApiExample(
                "a one-task protocol",
                yaml.safe_load(V2_EXAMPLE),
                request_only=True,
                media_type="text/yaml",
            )
        ],
        responses={
            202: OpenPaiSubmittedSerializer,
            400: refusal("not YAML, or an invalid protocol: every problem with its path"),
            403: refusal("you may not submit in that project"),
            409: refusal("one of your jobs already has this name"),
        },
    )
    def post(self, request):
        protocol = protocol_load(read_body(request))
        config, paths, project_name = protocol_to_config(protocol)
        project = project_named(request.user, project_name, field=f"extras.{PROJECT_EXTRA}")
        _refuse_taken_name(request.user, config["jobName"])
        try:
            first = services.job_submit(user=request.user, project=project, document=config)
        except SpecError as error:
            raise paths_back(error, paths) from None
        return _submitted(request, first, config["jobName"])

    @extend_schema(
        operation_id="openpai_v2_jobs_list",
        tags=[TAG],
        summary="List OpenPAI jobs (OpenPAI's job summaries)",
        description="OpenPAI's `listJobs`: the jobs submitted from OpenPAI configs that the "
        "caller sees in full, newest first, each with OpenPAI's state. `withTotalCount=true` "
        f"answers `{{totalCount, data}}`. `limit` default {LIST_LIMIT_DEFAULT}, at most "
        f"{LIST_LIMIT_MAX}.",
        parameters=[
            OpenApiParameter("username", str, description="only this user's jobs"),
            OpenApiParameter("state", str, enum=PAI_STATES, description="only jobs in it"),
            OpenApiParameter("offset", int, description="jobs to skip first"),
            OpenApiParameter(
                "limit", int, description=f"default {LIST_LIMIT_DEFAULT}, at most {LIST_LIMIT_MAX}"
            ),
            OpenApiParameter("withTotalCount", str, enum=["true", "false"]),
        ],
        responses={
            200: OpenApiResponse(
                PolymorphicProxySerializer(
                    component_name="OpenPaiJobList",
                    serializers=[JobSummarySerializer(many=True), JobSummaryPageSerializer],
                    resource_type_field_name=None,
                    many=False,
                ),
                description="the jobs, or {totalCount, data} with withTotalCount=true",
            ),
            400: refusal("a query parameter out of its range"),
        },
    )
    def get(self, request):
        offset = _list_int(request, "offset", 0, 10**9)
        limit = _list_int(request, "limit", LIST_LIMIT_DEFAULT, LIST_LIMIT_MAX)
        state = request.query_params.get("state") or None
        if state is not None and state not in PAI_STATES:
            raise BadRequest(
                "invalid query parameter state", [f"state: must be one of {', '.join(PAI_STATES)}"]
            )
        jobs, total = openpai_job_list(
            request.user,
            username=request.query_params.get("username") or None,
            offset=offset,
            limit=limit,
        )
        items = [job_summary(job) for job in jobs]
        if state is not None:  # a state is computed from the tasks: filtered on the page
            items = [item for item in items if item["state"] == state]
        if request.query_params.get("withTotalCount") == "true":
            return Response({"totalCount": total, "data": items})
        return Response(items)


def _find(request, user: str, job_name: str) -> PaiJob:
    job = openpai_job_find(request.user, username=user, job_name=job_name)
    if job is None:
        raise Http404(f"Job {user}~{job_name} is not found.")
    return job


class V2JobDetailView(OpenPaiAPIView):
    @extend_schema(
        operation_id="openpai_v2_job_get",
        tags=[TAG],
        summary="One OpenPAI job: its state, its tasks by role and its retries",
        description="OpenPAI's `getJob`: the job `{user}~{jobName}` (the newest of that name) "
        "with OpenPAI's job and task states (WAITING, RUNNING, STOPPING, STOPPED, SUCCEEDED, "
        "FAILED), its current attempt, `retries` and `retryDetails`, and the attempts that "
        "ended (`attempts`, the portal's addition).",
        parameters=[_USER, _JOB],
        responses={200: JobDetailSerializer},
    )
    def get(self, request, user: str, job_name: str):
        return Response(job_detail(_find(request, user, job_name)))


class V2JobExecutionTypeView(OpenPaiAPIView):
    @extend_schema(
        operation_id="openpai_v2_job_execution_type",
        tags=[TAG],
        summary="Stop an OpenPAI job (executionType STOP)",
        description='OpenPAI\'s `updateJobExecutionType`: `{"value": "STOP"}` stops every task '
        "(never retried afterwards); a job that has ended is left as it is. `START` is accepted "
        "for a job that has not ended (nothing to do) and refused for one that has: submit it "
        "again.",
        parameters=[_USER, _JOB],
        request=ExecutionTypeSerializer,
        examples=[OpenApiExample("stop", {"value": "STOP"}, request_only=True)],
        responses={
            202: OpenPaiMessageSerializer,
            400: refusal("not STOP or START, or START of a job that ended"),
            403: refusal("only members of the job's project may stop it"),
        },
    )
    def put(self, request, user: str, job_name: str):
        body = read_json_object(request)
        value = body.get("value")
        unknown = sorted(set(body) - {"value"})
        problems = [FieldError(key, "is not a known key (only value)") for key in unknown]
        if value not in ("STOP", "START"):
            problems.append(FieldError("value", "must be STOP or START"))
        if problems:
            raise SpecError(problems)
        job = _find(request, user, job_name)
        state = job_state(job)
        if value == "START" and state in FINAL:
            raise BadRequest(
                f"job {job.framework_name} has ended: submit it again to run it again",
                ["value: START of a job that ended is not offered"],
            )
        # Stopping a job that is being stopped or has ended changes nothing (no error).
        if value == "STOP" and state in ("WAITING", "RUNNING") and execution_type(job) == "START":
            live = next((t for t in job.tasks if t.status not in TERMINAL), job.tasks[0])
            ACTIONS["cancel"].run(job=live, user=request.user)
        return Response({"message": f"execute job {job.name} successfully"}, status=202)
