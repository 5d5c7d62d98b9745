"""The Tapis v3 Jobs-shaped API under ``/api/tapis/v3/`` (docs/tapis.md): scripts written for
Tapis (tapipy included) port with a base-URL change.

Authentication: the portal's API token, sent as Tapis clients send their JWT
(``X-Tapis-Token: <token>``) or as the portal's ``Authorization: Token <token>``. Every answer,
errors included, is Tapis' envelope ``{status, message, result, version}``.
"""

from __future__ import annotations

from django.http import Http404, HttpResponse
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema
from rest_framework import exceptions
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.settings import api_settings

from core.api.common import PortalAPIView, parse_uuid_or_404, read_json_object
from core.api.openapi import refusal
from core.api_errors import BadRequest, exception_handler
from core.errors import NotAllowed
from jobs.models import Job, JobEvent
from jobs.selectors import job_list_visible_to, job_sees_full
from jobs.transitions import job_tapis_status
from jobs.user_actions.registry import ACTIONS
from tapis.api.auth import TapisTokenAuthentication
from tapis.api.job_lists import job_order, jobs_of_list_type
from tapis.api.serializers import (
    TapisAppEnvelope,
    TapisAppListEnvelope,
    TapisEmptyEnvelope,
    TapisErrorSerializer,
    TapisHistoryEnvelope,
    TapisJobEnvelope,
    TapisJobListEnvelope,
    TapisJobStatusEnvelope,
    TapisMessageEnvelope,
    TapisResubmitRequestEnvelope,
)
from tapis.definitions import app_to_json
from tapis.selectors import app_get_visible, app_list_visible_to
from tapis.services import app_create, app_delete, app_update
from tapis.shapes import (
    condition,
    envelope,
    error_envelope,
    history_items,
    job_list_item,
    job_to_tapis,
)
from tapis.submit import job_resubmit, tapis_job_submit

TAG = "Tapis v3"
LIST_LIMIT_DEFAULT = 100
LIST_LIMIT_MAX = 1000
# An app definition for the schema's examples (docs/tapis.md).
APP_EXAMPLE = {
    "id": "classify",
    "version": "0.1",
    "description": "image classifier",
    "visibility": "project",
    "project": "vision",
    "containerImage": "debian:stable",
    "command": "python /app/classify.py",
    "jobAttributes": {
        "parameterSet": {
            "appArgs": [{"name": "model", "inputMode": "REQUIRED", "arg": ""}],
            "envVariables": [{"key": "MODE", "value": "fast"}],
        },
        "fileInputs": [{"name": "image", "inputMode": "REQUIRED", "targetPath": "img/dog.jpg"}],
        "resources": {"gpus": 1, "cpus": 1, "cpuMemoryGb": 1},
        "scheduling": {"maxDuration": "1 hour"},
    },
}


def tapis_exception_handler(exc, context):
    """The portal's error answer, wrapped in Tapis' envelope (``status: "error"``)."""
    response = exception_handler(exc, context)
    if response is None:
        return None
    data = response.data if isinstance(response.data, dict) else {"error": str(response.data)}
    response.data = error_envelope(data)
    return response


class TapisAPIView(PortalAPIView):
    authentication_classes = [
        TapisTokenAuthentication,
        # api_settings imports the configured dotted paths: classes here (stubs say str).
        *api_settings.DEFAULT_AUTHENTICATION_CLASSES,  # type: ignore[list-item]
    ]
    permission_classes = [IsAuthenticated]
    error_body = TapisErrorSerializer

    def get_exception_handler(self):
        return tapis_exception_handler

    def get_authenticate_header(self, request):
        return 'X-Tapis-Token realm="api"'


def int_param(request, name: str, default: int, maximum: int | None = None) -> int:
    value = request.query_params.get(name)
    if value is None or value == "":
        return default
    try:
        number = int(value)
    except ValueError:
        raise BadRequest(
            f"invalid query parameter {name}", [f"{name}: must be an integer"]
        ) from None
    if number < 0 or (maximum is not None and number > maximum):
        raise BadRequest(
            f"invalid query parameter {name}", [f"{name}: must be between 0 and {maximum}"]
        )
    return number


def tapis_job(request, job_uuid: str) -> Job:
    """A job the caller sees in full (their projects' jobs, shared ones); 404 otherwise, so
    a uuid never tells an outsider that a job exists."""
    job = job_list_visible_to(request.user).filter(uuid=parse_uuid_or_404(job_uuid)).first()
    if job is None or not job_sees_full(request.user, job):
        raise Http404(f"no job {job_uuid}")
    return job


LIST_PAGING = [
    OpenApiParameter(
        "limit", int, description=f"default {LIST_LIMIT_DEFAULT}, at most {LIST_LIMIT_MAX}"
    ),
    OpenApiParameter("skip", int, description="how many to skip first"),
]
BAD_QUERY = refusal("a query parameter out of its range")
_FROM_OPENPAI = refusal("a task of an OpenPAI job: submit its config again")
ENDED_ONLY = refusal("the job has not ended (allowIfRunning=true lists what is there)")


class JobSubmitView(TapisAPIView):
    @extend_schema(
        operation_id="tapis_jobs_submit",
        tags=[TAG],
        summary="submitJob: run an app",
        description=(
            "Tapis' ReqSubmitJob: `appId` and `appVersion` name an app you may use; "
            "`parameterSet`, `fileInputs`, resources and `subscriptions` fill in or override "
            "its defaults (docs/tapis.md). The job is checked as every submission is and "
            "queued; the answer is the new job."
        ),
        request={"application/json": OpenApiTypes.OBJECT},
        examples=[
            OpenApiExample(
                "run an app",
                {
                    "name": "classify-dog",
                    "appId": "classify",
                    "appVersion": "0.1",
                    "parameterSet": {"appArgs": [{"name": "model", "arg": "--model resnet"}]},
                    "fileInputs": [{"name": "image", "sourceUrl": "/project/data/dog.jpg"}],
                },
                request_only=True,
            )
        ],
        responses={
            200: TapisJobEnvelope,
            400: refusal("not a JSON object, an unknown app, or arguments the app refuses"),
            403: refusal("you may not use this app or submit in its project"),
        },
    )
    def post(self, request):
        job = tapis_job_submit(user=request.user, request=read_json_object(request))
        return Response(envelope(job_to_tapis(job), f"job {job.uuid} submitted"))


class JobListView(TapisAPIView):
    @extend_schema(
        operation_id="tapis_jobs_list",
        tags=[TAG],
        summary="getJobList: your jobs and the jobs shared with you",
        description=(
            "Newest first unless `orderBy` says otherwise; `listType` picks your own jobs "
            "(MY_JOBS, the default), those of your projects' other members and the ones "
            "shared with you (SHARED_JOBS), or both (ALL_JOBS)."
        ),
        parameters=[
            *LIST_PAGING,
            OpenApiParameter("listType", str, enum=["MY_JOBS", "SHARED_JOBS", "ALL_JOBS"]),
            OpenApiParameter(
                "orderBy", str, description="created, name or lastUpdated, then (asc) or (desc)"
            ),
            OpenApiParameter("computeTotal", bool, description="add metadata.totalCount"),
        ],
        responses={200: TapisJobListEnvelope, 400: BAD_QUERY},
    )
    def get(self, request):
        limit = int_param(request, "limit", LIST_LIMIT_DEFAULT, LIST_LIMIT_MAX)
        skip = int_param(request, "skip", 0)
        jobs = jobs_of_list_type(request.user, request.query_params.get("listType"))
        jobs = jobs.order_by(*job_order(request.query_params.get("orderBy")))
        total = jobs.count() if request.query_params.get("computeTotal") == "true" else None
        now = timezone.now()
        items = [job_list_item(job, now=now) for job in jobs[skip : skip + limit]]
        metadata = {"recordCount": len(items), "recordLimit": limit, "recordsSkipped": skip}
        if total is not None:
            metadata["totalCount"] = total
        return Response(envelope(items, "jobs listed", metadata=metadata))


class JobDetailView(TapisAPIView):
    @extend_schema(
        operation_id="tapis_jobs_get",
        tags=[TAG],
        summary="getJob: one job",
        description="A job you see in full (your projects' jobs, and jobs shared with you).",
        responses={200: TapisJobEnvelope},
    )
    def get(self, request, job_uuid):
        job = tapis_job(request, job_uuid)
        return Response(envelope(job_to_tapis(job), "job retrieved"))


class JobStatusView(TapisAPIView):
    @extend_schema(
        operation_id="tapis_jobs_status",
        tags=[TAG],
        summary="getJobStatus: a job's Tapis status",
        description="The job's status in Tapis' terms (docs/tapis.md maps the portal's "
        "states) and, once it ended, why (`condition`).",
        responses={200: TapisJobStatusEnvelope},
    )
    def get(self, request, job_uuid):
        job = tapis_job(request, job_uuid)
        status = job_tapis_status(job, timezone.now())
        return Response(
            envelope({"status": status, "condition": condition(job, status)}, "job status")
        )


class JobHistoryView(TapisAPIView):
    @extend_schema(
        operation_id="tapis_jobs_history",
        tags=[TAG],
        summary="getJobHistory: a job's events, oldest first",
        description="Status changes and stages as JOB_NEW_STATUS, errors as "
        "JOB_ERROR_MESSAGE, other messages as JOB_USER_EVENT.",
        parameters=LIST_PAGING,
        responses={200: TapisHistoryEnvelope, 400: BAD_QUERY},
    )
    def get(self, request, job_uuid):
        job = tapis_job(request, job_uuid)
        limit = int_param(request, "limit", LIST_LIMIT_DEFAULT, LIST_LIMIT_MAX)
        skip = int_param(request, "skip", 0)
        events = list(JobEvent.objects.filter(job=job).order_by("time", "id")[skip : skip + limit])
        return Response(envelope(history_items(job, events), "job history"))


class JobCancelView(TapisAPIView):
    @extend_schema(
        operation_id="tapis_jobs_cancel",
        tags=[TAG],
        summary="cancelJob",
        description="Asks for the job to be cancelled: a queued job at once, a running one "
        "is stopped by the runtime.",
        request=None,
        responses={
            200: TapisMessageEnvelope,
            403: refusal("only members of the job's project may cancel it"),
            409: refusal("the job has already ended"),
        },
    )
    def post(self, request, job_uuid):
        job = tapis_job(request, job_uuid)
        # The registry: a task of a multi-task OpenPAI job cancels its whole gang.
        ACTIONS["cancel"].run(job=job, user=request.user, reason="Tapis cancelJob")
        return Response(
            envelope({"message": f"cancel of job {job.uuid} requested"}, "job cancel requested")
        )


class JobResubmitView(TapisAPIView):
    @extend_schema(
        operation_id="tapis_jobs_resubmit",
        tags=[TAG],
        summary="resubmitJob: the same job again",
        description="Submits a new job from the same app and arguments (or the same "
        "document), with every check of a new submission; the answer is the new job.",
        request=None,
        responses={
            200: TapisJobEnvelope,
            400: refusal("the job's request no longer passes the submission checks"),
            403: refusal("you may not submit in the job's project"),
            409: _FROM_OPENPAI,
        },
    )
    def post(self, request, job_uuid):
        job = tapis_job(request, job_uuid)
        new = job_resubmit(job=job, user=request.user)
        return Response(envelope(job_to_tapis(new), f"job {new.uuid} submitted"))


class JobResubmitRequestView(TapisAPIView):
    @extend_schema(
        operation_id="tapis_jobs_resubmit_request",
        tags=[TAG],
        summary="getResubmitRequestJson: the request a job was made from",
        description="The submitJob request of a job submitted from an app, as stored.",
        responses={
            200: TapisResubmitRequestEnvelope,
            400: refusal("this job was not submitted from an app"),
        },
    )
    def get(self, request, job_uuid):
        job = tapis_job(request, job_uuid)
        tapis = (job.origin or {}).get("tapis")
        if not tapis:
            raise BadRequest("this job was not submitted from an app")
        return Response(envelope(tapis, "resubmit request"))


# --- apps ------------------------------------------------------------------------------------


class AppListView(TapisAPIView):
    @extend_schema(
        operation_id="tapis_apps_list",
        tags=[TAG],
        summary="getApps: the apps you may use",
        description="Your apps, your projects' apps, apps shared with you and public ones "
        f"(at most {LIST_LIMIT_MAX}); `id` keeps the versions of one app.",
        parameters=[OpenApiParameter("id", str, description="only this app's versions")],
        responses={200: TapisAppListEnvelope},
    )
    def get(self, request):
        apps = app_list_visible_to(request.user)
        if search := request.query_params.get("id"):
            apps = apps.filter(app_id=search)
        return Response(envelope([app_to_json(app) for app in apps[:LIST_LIMIT_MAX]], "apps"))

    @extend_schema(
        operation_id="tapis_apps_create",
        tags=[TAG],
        summary="createAppVersion: a new app or a new version of yours",
        description="The body is an app definition (docs/tapis.md): `id`, `version`, "
        "`containerImage`, and optionally `command`, `visibility`, `project` and "
        "`jobAttributes` (arguments, environment, file inputs, resources, scheduling).",
        request={"application/json": OpenApiTypes.OBJECT},
        examples=[OpenApiExample("an app", {**APP_EXAMPLE, "version": "0.2"}, request_only=True)],
        responses={
            201: TapisAppEnvelope,
            400: refusal("an invalid definition: every problem is named"),
            409: refusal("this id and version exist already"),
        },
    )
    def post(self, request):
        app = app_create(user=request.user, definition=read_json_object(request))
        response = Response(envelope(app_to_json(app), f"app {app} created"), status=201)
        return response


def _visible_app(request, app_id: str, version: str | None):
    app = app_get_visible(request.user, app_id, version)
    if app is None:
        raise Http404(f"no app {app_id}" + (f" version {version}" if version else ""))
    return app


class AppLatestView(TapisAPIView):
    """``apps/{id}``: the latest version; changing or deleting names a version
    (``AppVersionView``)."""

    @extend_schema(
        operation_id="tapis_apps_get_latest",
        tags=[TAG],
        summary="getAppLatestVersion: the newest version of an app",
        description="The newest version of the app that you may use.",
        responses={200: TapisAppEnvelope},
    )
    def get(self, request, app_id):
        return Response(envelope(app_to_json(_visible_app(request, app_id, None)), "app retrieved"))

    @extend_schema(exclude=True)  # not an operation: it only says where the right one is
    def put(self, request, app_id):
        raise exceptions.MethodNotAllowed("PUT", "name the version: apps/{id}/{version}")

    @extend_schema(exclude=True)
    def delete(self, request, app_id):
        raise exceptions.MethodNotAllowed("DELETE", "name the version: apps/{id}/{version}")


class AppVersionView(TapisAPIView):
    @extend_schema(
        operation_id="tapis_apps_get",
        tags=[TAG],
        summary="getApp: one version of an app",
        description="That version of the app, if you may use it.",
        responses={200: TapisAppEnvelope},
    )
    def get(self, request, app_id, version):
        return Response(
            envelope(app_to_json(_visible_app(request, app_id, version)), "app retrieved")
        )

    @extend_schema(
        operation_id="tapis_apps_put",
        tags=[TAG],
        summary="putApp: replace an app version's definition",
        description="The whole definition, as for createAppVersion; `id` and `version` "
        "must stay those of the path. Only the owner (or an admin) changes an app, and "
        "never a locked one.",
        request={"application/json": OpenApiTypes.OBJECT},
        examples=[OpenApiExample("apps/classify/0.1", APP_EXAMPLE, request_only=True)],
        responses={
            200: TapisAppEnvelope,
            400: refusal("an invalid definition: every problem is named"),
            403: refusal("only the app's owner or an admin may change it"),
            409: refusal("the app version is locked"),
        },
    )
    def put(self, request, app_id, version):
        app = _visible_app(request, app_id, version)
        app = app_update(app=app, user=request.user, definition=read_json_object(request))
        return Response(envelope(app_to_json(app), f"app {app} updated"))

    @extend_schema(
        operation_id="tapis_apps_delete",
        tags=[TAG],
        summary="deleteApp: delete an app version",
        description="Only the owner (or an admin) deletes an app; jobs made from it keep "
        "their arguments.",
        request=None,
        responses={
            200: TapisEmptyEnvelope,
            403: refusal("only the app's owner or an admin may delete it"),
            409: refusal("the app version is locked"),
        },
    )
    def delete(self, request, app_id, version):
        app = _visible_app(request, app_id, version)
        app_delete(app=app, user=request.user)
        return Response(envelope(None, f"app {app_id} {version} deleted"))


# --- the portal's own resubmit (GPULab-side clients) -------------------------------------------


class PortalResubmitView(PortalAPIView):
    @extend_schema(
        operation_id="portal_jobs_resubmit",
        tags=["portal"],
        summary="Resubmit a job (same document, or same app and arguments)",
        description="Submits a new job from the same document (or the same app and "
        "arguments) in the job's project, with every check of a new submission; answers "
        "the new job's uuid as text, like a GPULab submit.",
        request=None,
        responses={
            (201, "text/plain"): OpenApiTypes.STR,
            400: refusal("the job's request no longer passes the submission checks"),
            403: refusal("only members of the job's project may resubmit it"),
            409: _FROM_OPENPAI,
        },
    )
    def post(self, request, job_id):
        job = job_list_visible_to(request.user).filter(uuid=parse_uuid_or_404(job_id)).first()
        if job is None:
            raise Http404("no such job")
        if not job_sees_full(request.user, job):
            raise NotAllowed("only members of the job's project may resubmit it")
        new = job_resubmit(job=job, user=request.user)
        return HttpResponse(str(new.uuid), status=201, content_type="text/plain; charset=utf-8")
