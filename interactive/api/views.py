"""The portal API's sessions routes (docs/sessions.md "REST"): thin views over
interactive/services.py. Answers never carry the app token."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from accounts.models import Project
from accounts.selectors import sole_project_of
from core.api.common import PortalAPIView, parse_uuid_or_404, read_json_object
from core.api.openapi import refusal
from core.errors import FieldError, FieldErrors, NotFound
from interactive.api.serializers import (
    SessionListSerializer,
    SessionSerializer,
    SessionStartSerializer,
    SessionTemplateListSerializer,
)
from interactive.models import InteractiveSession, SessionTemplate
from interactive.selectors import session_list_visible_to, session_visible_to
from interactive.services import session_extend, session_start, session_stop
from interactive.summary import session_summary
from interactive.web_ports import job_port_open
from jobs.selectors import job_visible_to

TAG = "Portal: interactive sessions"
LIST_MAX = 200
FIELDS = {"template", "project", "gpus", "hours", "open_to_project", "logdir"}


def _answer(request, session: InteractiveSession) -> dict[str, Any]:
    summary = session_summary(session)
    return SessionSerializer(
        {**summary, "open_url": request.build_absolute_uri(summary["open_path"])}
    ).data


def _session(request, key: str) -> InteractiveSession:
    session = session_visible_to(request.user, key)
    if session is None:
        raise NotFound(f"no session {key} that you may open")
    return session


def template_json(template: SessionTemplate) -> dict[str, Any]:
    return {
        "slug": template.slug,
        "title": template.title,
        "kind": template.kind,
        "image": template.image,
        "port": template.port,
        "landing_path": template.landing_path,
        "gpus": template.gpus,
        "cpus": template.cpus,
        "memory_gb": template.memory_gb,
        "hours": template.time_box.total_seconds() / 3600,
    }


def _int(body: dict, name: str, errors: list[FieldError]) -> int | None:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        errors.append(FieldError(name, "must be a whole number"))
        return None
    return value


def _number(body: dict, name: str, errors: list[FieldError]) -> float | None:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        errors.append(FieldError(name, "must be a number"))
        return None
    return float(value)


def start_arguments(user, body: dict) -> dict[str, Any]:
    """The body of POST sessions as session_start's arguments; FieldErrors naming each wrong
    field otherwise."""
    errors = [FieldError(name, "unknown field") for name in sorted(set(body) - FIELDS)]
    template = None
    slug = body.get("template")
    if not isinstance(slug, str) or not slug:
        errors.append(FieldError("template", "is required: a template's slug"))
    else:
        template = SessionTemplate.objects.filter(slug=slug, enabled=True).first()
        if template is None:
            errors.append(FieldError("template", f"no enabled template {slug!r}"))
    project = None
    name = body.get("project")
    if name is None:
        project, count = sole_project_of(user)
        if project is None:
            why = "you are a member of several projects" if count else "you are in no project"
            errors.append(FieldError("project", f"is required ({why})"))
    elif not isinstance(name, str) or not name:
        errors.append(FieldError("project", "must be a project's name"))
    else:
        project = Project.objects.filter(name=name).first()
        if project is None:
            errors.append(FieldError("project", f"no project {name!r}"))
    gpus = _int(body, "gpus", errors)
    hours = _number(body, "hours", errors)
    shared = body.get("open_to_project", False)
    if not isinstance(shared, bool):
        errors.append(FieldError("open_to_project", "must be true or false"))
    logdir = body.get("logdir")
    if logdir is not None and not isinstance(logdir, str):
        errors.append(FieldError("logdir", "must be a folder's path"))
    if errors:
        raise FieldErrors(errors)
    return {
        "template": template,
        "project": project,
        "gpus": gpus,
        "hours": hours,
        "open_to_project": shared,
        "logdir": logdir,
    }


class SessionTemplatesView(PortalAPIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(
        operation_id="portal_session_templates",
        tags=[TAG],
        summary="The session templates one can start",
        description="The enabled templates (JupyterLab, VS Code, TensorBoard, ...) with "
        "their default resources and time box.",
        responses={200: SessionTemplateListSerializer},
    )
    def get(self, request):
        templates = SessionTemplate.objects.filter(enabled=True)
        return Response({"templates": [template_json(t) for t in templates]})


class SessionsView(PortalAPIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(
        operation_id="portal_sessions_list",
        tags=[TAG],
        summary="The sessions you may open",
        description="Your sessions, your projects' sessions opened to the project and the "
        f"sessions shared with you, newest first (at most {LIST_MAX}).",
        responses={200: SessionListSerializer},
    )
    def get(self, request):
        sessions = session_list_visible_to(request.user)[:LIST_MAX]
        return Response({"sessions": [_answer(request, s) for s in sessions]})

    @extend_schema(
        operation_id="portal_sessions_start",
        tags=[TAG],
        summary="Start a session",
        description="Submits the session's interactive job (it starts now or fails, as any "
        "interactive job) with the template's command, resources within the site's policy and "
        "its time box, and answers the session.",
        request=SessionStartSerializer,
        examples=[
            OpenApiExample(
                "JupyterLab",
                value={"template": "jupyterlab", "project": "vision"},
                request_only=True,
            )
        ],
        responses={
            201: SessionSerializer,
            400: refusal("a wrong field, each named (or a refusal of the job's own checks)"),
            403: refusal("you are not a member of the project"),
        },
    )
    def post(self, request):
        body = read_json_object(request)
        session = session_start(user=request.user, **start_arguments(request.user, body))
        return Response(_answer(request, session), status=201)


class SessionView(PortalAPIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(
        operation_id="portal_session_get",
        tags=[TAG],
        summary="One session",
        description="The session, its countdowns and what is left of its extensions.",
        responses={200: SessionSerializer},
    )
    def get(self, request, session_key: str):
        return Response(_answer(request, _session(request, session_key)))

    @extend_schema(
        operation_id="portal_session_stop",
        tags=[TAG],
        summary="Stop a session",
        description="A running session is halted by GPULab's procedure (its app saves its "
        "work and stops); one that has not started yet is cancelled.",
        responses={
            200: SessionSerializer,
            403: refusal("only members of the session's project may stop it"),
            409: refusal("the session has ended or is stopping already"),
        },
    )
    def delete(self, request, session_key: str):
        session = _session(request, session_key)
        session_stop(session=session, user=request.user)
        session.refresh_from_db()
        session.job.refresh_from_db()
        return Response(_answer(request, session))


class SessionExtendView(PortalAPIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(
        operation_id="portal_session_extend",
        tags=[TAG],
        summary="Extend a session's time box",
        description="Adds PORTAL_SESSION_EXTEND_SECONDS to the session's time box, at most "
        "PORTAL_SESSION_MAX_EXTENDS times and never past PORTAL_SESSION_MAX_SECONDS in all.",
        request=None,
        responses={
            200: SessionSerializer,
            403: refusal("only members of the session's project may extend it"),
            409: refusal("no extension left, or the session has ended"),
        },
    )
    def post(self, request, session_key: str):
        session = _session(request, session_key)
        session = session_extend(session=session, user=request.user)
        return Response(_answer(request, session))


class JobWebPortView(PortalAPIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(
        operation_id="portal_job_web_port_open",
        tags=[TAG],
        summary="Open a job's web port through the portal",
        description="For a RUNNING job that declares this container port in "
        "request.docker.portMappings: the port's row on the session proxy (made once, reused "
        "after), answered as a session whose url serves the app behind the portal's login "
        "(the prefix /s/<key> stripped). No time box, no idle cull: the job's own lifetime.",
        request=None,
        responses={
            200: SessionSerializer,
            400: refusal("port: the job does not declare it"),
            403: refusal("only the job's owner and those it is shared with may open it"),
            404: refusal("no such job that you may see"),
            409: refusal("status: the job is not RUNNING"),
        },
    )
    def post(self, request, job_id: str, port: str):
        job = job_visible_to(request.user, parse_uuid_or_404(job_id))
        if job is None:
            raise NotFound(f"no job {job_id} that you may see")
        session = job_port_open(job=job, port=int(port), user=request.user)
        return Response(_answer(request, session))
