"""The Tapis v3 Jobs-shaped API under ``/api/tapis/v3/`` (docs/tapis.md): scripts written for
Tapis (tapipy included) port with a base-URL change.

Authentication: the portal's API token, sent as Tapis clients send their JWT
(``X-Tapis-Token: <token>``) or as the portal's ``Authorization: Token <token>``. Every answer,
errors included, is Tapis' envelope ``{status, message, result, version}``.
"""

from __future__ import annotations

from django.db.models import Q
from django.http import Http404, HttpResponse
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import exceptions
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.settings import api_settings

from core.api.common import PortalAPIView, parse_uuid_or_404, read_json_object
from core.api_errors import BadRequest, exception_handler
from core.errors import NotAllowed
from jobs.actions.registry import ACTIONS
from jobs.lifecycle.stages import job_tapis_status
from jobs.models import Job, JobEvent
from jobs.selectors import job_list_not_deleted, job_list_visible_to, job_sees_full, project_ids_of
from tapis.api.auth import TapisTokenAuthentication
from tapis.definitions import app_to_json
from tapis.selectors import app_get_visible, app_list_visible_to
from tapis.services import app_create, app_delete, app_update
from tapis.shapes import condition, envelope, history_items, job_list_item, job_to_tapis
from tapis.submit import job_resubmit, tapis_job_submit

TAG = "Tapis v3"
LIST_LIMIT_DEFAULT = 100
LIST_LIMIT_MAX = 1000
ORDER_FIELDS = {"created": "created", "name": "name", "lastUpdated": "status_updated"}


def tapis_exception_handler(exc, context):
    """The portal's error answer, wrapped in Tapis' envelope (``status: "error"``)."""
    response = exception_handler(exc, context)
    if response is None:
        return None
    data = response.data if isinstance(response.data, dict) else {"error": str(response.data)}
    errors = data.get("errors") or []
    message = data.get("error") or "error"
    if errors:
        message = f"{message}: " + "; ".join(errors)
    response.data = envelope({"errors": errors} if errors else None, message, status="error")
    return response


class TapisAPIView(PortalAPIView):
    authentication_classes = [
        TapisTokenAuthentication,
        # api_settings imports the configured dotted paths: classes here (stubs say str).
        *api_settings.DEFAULT_AUTHENTICATION_CLASSES,  # type: ignore[list-item]
    ]
    permission_classes = [IsAuthenticated]

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


class JobSubmitView(TapisAPIView):
    @extend_schema(
        operation_id="tapis_jobs_submit",
        tags=[TAG],
        summary="submitJob: run an app (Tapis ReqSubmitJob)",
        request={"application/json": OpenApiTypes.OBJECT},
        responses={200: OpenApiTypes.OBJECT},
    )
    def post(self, request):
        job = tapis_job_submit(user=request.user, request=read_json_object(request))
        return Response(envelope(job_to_tapis(job), f"job {job.uuid} submitted"))


class JobListView(TapisAPIView):
    @extend_schema(operation_id="tapis_jobs_list", tags=[TAG], summary="getJobList")
    def get(self, request):
        limit = int_param(request, "limit", LIST_LIMIT_DEFAULT, LIST_LIMIT_MAX)
        skip = int_param(request, "skip", 0)
        list_type = (request.query_params.get("listType") or "MY_JOBS").upper()
        jobs = job_list_not_deleted(job_list_visible_to(request.user))
        mine = Q(owner=request.user)
        # Tapis' "shared": other members' jobs of the caller's projects and jobs shared with
        # the caller (jobs/actions/shares.py; job_list_visible_to annotates shared_with_viewer).
        shared = (
            Q(project_id__in=project_ids_of(request.user)) | Q(shared_with_viewer=True)
        ) & ~mine
        if list_type == "MY_JOBS":
            jobs = jobs.filter(mine)
        elif list_type == "SHARED_JOBS":
            jobs = jobs.filter(shared)
        elif list_type == "ALL_JOBS":
            jobs = jobs.filter(mine | shared)
        else:
            raise BadRequest(
                "invalid query parameter listType",
                ["listType: must be MY_JOBS, SHARED_JOBS or ALL_JOBS"],
            )
        jobs = jobs.order_by(*_order(request.query_params.get("orderBy")))
        total = jobs.count() if request.query_params.get("computeTotal") == "true" else None
        now = timezone.now()
        items = [job_list_item(job, now=now) for job in jobs[skip : skip + limit]]
        metadata = {"recordCount": len(items), "recordLimit": limit, "recordsSkipped": skip}
        if total is not None:
            metadata["totalCount"] = total
        return Response(envelope(items, "jobs listed", metadata=metadata))


def _order(value: str | None) -> list[str]:
    """Tapis' ``orderBy``: ``created``, ``name(asc)``, ``lastUpdated(desc)``; default newest
    first."""
    if not value:
        return ["-created", "-id"]
    field, _, direction = value.partition("(")
    direction = direction.rstrip(")").lower() or "asc"
    column = ORDER_FIELDS.get(field.strip())
    if column is None or direction not in ("asc", "desc"):
        raise BadRequest(
            "invalid query parameter orderBy",
            [f"orderBy: must be one of {', '.join(ORDER_FIELDS)}, optionally (asc) or (desc)"],
        )
    sign = "-" if direction == "desc" else ""
    return [f"{sign}{column}", f"{sign}id"]


class JobDetailView(TapisAPIView):
    @extend_schema(operation_id="tapis_jobs_get", tags=[TAG], summary="getJob")
    def get(self, request, job_uuid):
        job = tapis_job(request, job_uuid)
        return Response(envelope(job_to_tapis(job), "job retrieved"))


class JobStatusView(TapisAPIView):
    @extend_schema(operation_id="tapis_jobs_status", tags=[TAG], summary="getJobStatus")
    def get(self, request, job_uuid):
        job = tapis_job(request, job_uuid)
        status = job_tapis_status(job, timezone.now())
        return Response(
            envelope({"status": status, "condition": condition(job, status)}, "job status")
        )


class JobHistoryView(TapisAPIView):
    @extend_schema(operation_id="tapis_jobs_history", tags=[TAG], summary="getJobHistory")
    def get(self, request, job_uuid):
        job = tapis_job(request, job_uuid)
        limit = int_param(request, "limit", LIST_LIMIT_DEFAULT, LIST_LIMIT_MAX)
        skip = int_param(request, "skip", 0)
        events = list(JobEvent.objects.filter(job=job).order_by("time", "id")[skip : skip + limit])
        return Response(envelope(history_items(job, events), "job history"))


class JobCancelView(TapisAPIView):
    @extend_schema(operation_id="tapis_jobs_cancel", tags=[TAG], summary="cancelJob")
    def post(self, request, job_uuid):
        job = tapis_job(request, job_uuid)
        # The registry: a task of a multi-task OpenPAI job cancels its whole gang.
        ACTIONS["cancel"].run(job=job, user=request.user, reason="Tapis cancelJob")
        return Response(
            envelope({"message": f"cancel of job {job.uuid} requested"}, "job cancel requested")
        )


class JobResubmitView(TapisAPIView):
    @extend_schema(operation_id="tapis_jobs_resubmit", tags=[TAG], summary="resubmitJob")
    def post(self, request, job_uuid):
        job = tapis_job(request, job_uuid)
        new = job_resubmit(job=job, user=request.user)
        return Response(envelope(job_to_tapis(new), f"job {new.uuid} submitted"))


class JobResubmitRequestView(TapisAPIView):
    @extend_schema(
        operation_id="tapis_jobs_resubmit_request", tags=[TAG], summary="getResubmitRequestJson"
    )
    def get(self, request, job_uuid):
        job = tapis_job(request, job_uuid)
        tapis = (job.origin or {}).get("tapis")
        if not tapis:
            raise BadRequest("this job was not submitted from an app")
        return Response(envelope(tapis, "resubmit request"))


# --- apps ------------------------------------------------------------------------------------


class AppListView(TapisAPIView):
    @extend_schema(operation_id="tapis_apps_list", tags=[TAG], summary="getApps")
    def get(self, request):
        apps = app_list_visible_to(request.user)
        if search := request.query_params.get("id"):
            apps = apps.filter(app_id=search)
        return Response(envelope([app_to_json(app) for app in apps[:LIST_LIMIT_MAX]], "apps"))

    @extend_schema(
        operation_id="tapis_apps_create",
        tags=[TAG],
        summary="createAppVersion",
        request={"application/json": OpenApiTypes.OBJECT},
    )
    def post(self, request):
        app = app_create(user=request.user, definition=read_json_object(request))
        response = Response(envelope(app_to_json(app), f"app {app} created"), status=201)
        return response


class AppDetailView(TapisAPIView):
    def _app(self, request, app_id, version):
        app = app_get_visible(request.user, app_id, version)
        if app is None:
            raise Http404(f"no app {app_id}" + (f" version {version}" if version else ""))
        return app

    @extend_schema(operation_id="tapis_apps_get", tags=[TAG], summary="getApp")
    def get(self, request, app_id, version=None):
        return Response(envelope(app_to_json(self._app(request, app_id, version)), "app retrieved"))

    @extend_schema(operation_id="tapis_apps_put", tags=[TAG], summary="putApp")
    def put(self, request, app_id, version=None):
        if version is None:
            raise exceptions.MethodNotAllowed("PUT", "name the version: apps/{id}/{version}")
        app = self._app(request, app_id, version)
        app = app_update(app=app, user=request.user, definition=read_json_object(request))
        return Response(envelope(app_to_json(app), f"app {app} updated"))

    @extend_schema(operation_id="tapis_apps_delete", tags=[TAG], summary="deleteApp")
    def delete(self, request, app_id, version=None):
        if version is None:
            raise exceptions.MethodNotAllowed("DELETE", "name the version: apps/{id}/{version}")
        app = self._app(request, app_id, version)
        app_delete(app=app, user=request.user)
        return Response(envelope(None, f"app {app_id} {version} deleted"))


# --- the portal's own resubmit (GPULab-side clients) -------------------------------------------


class PortalResubmitView(PortalAPIView):
    """``POST /api/portal/jobs/<uuid>/resubmit``: the new job's uuid as text (like submit)."""

    @extend_schema(
        operation_id="portal_jobs_resubmit",
        tags=["portal"],
        summary="Resubmit a job (same document, or same app and arguments)",
        request=None,
        responses={(201, "text/plain"): OpenApiTypes.STR},
    )
    def post(self, request, job_id):
        job = job_list_visible_to(request.user).filter(uuid=parse_uuid_or_404(job_id)).first()
        if job is None:
            raise Http404("no such job")
        if not job_sees_full(request.user, job):
            raise NotAllowed("only members of the job's project may resubmit it")
        new = job_resubmit(job=job, user=request.user)
        return HttpResponse(str(new.uuid), status=201, content_type="text/plain; charset=utf-8")
