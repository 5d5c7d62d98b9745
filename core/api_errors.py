"""DRF exception handler: every refused API request gets a 4xx answer with a clear message.

Shape of every error body: ``{"error": "<what went wrong>"}``, plus ``"errors": [...]`` (one
``path: rule`` string per problem) for rejected input. Cases:

- SpecError (bad job document or bad JSON) -> 400, errors name the field paths, JSON syntax
  errors give the line and column;
- ServiceError (core.errors) -> its status_code (403 not allowed, 404, 409 conflict, 400);
- Django's RequestDataTooBig (body above DATA_UPLOAD_MAX_MEMORY_SIZE) -> 413, never 400/500;
- Django's Http404, PermissionDenied and DRF's own exceptions -> their status, same shape;
- a busy database (lock wait or connection pool timeout, core.dbbusy) -> 503 with
  ``Retry-After``, never 500.

Outside DRF views (unknown routes, bad Host headers, crashes), ApiJsonErrorsMiddleware and the
error handlers (portal/error_pages.py) give every path under /api/ the same JSON shape.
"""

import logging
from collections.abc import Callable
from http import HTTPStatus
from typing import Any

from django.core.exceptions import DisallowedHost, RequestDataTooBig
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404, HttpRequest, JsonResponse
from django.http.response import HttpResponseBase
from rest_framework import exceptions
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_handler

from core import dbbusy
from core.body_limits import too_large_message
from core.errors import JSON_PATH, FieldErrors, ServiceError

security_log = logging.getLogger("django.security.DisallowedHost")


class BadRequest(exceptions.APIException):
    """400 with a message and, optionally, a list of ``path: rule`` problems."""

    status_code = 400
    default_detail = "bad request"

    def __init__(self, message: str, errors: list[str] | None = None):
        super().__init__(message)
        self.errors = list(errors or [])


class PayloadTooLarge(exceptions.APIException):
    status_code = 413
    default_detail = "request body too large"


def _flatten(detail: object, prefix: str = "") -> list[str]:
    """DRF ValidationError detail (dict / list / str) -> ["path: message", ...]."""
    if isinstance(detail, dict):
        out: list[str] = []
        for key, value in detail.items():
            path = key if key != "non_field_errors" else ""
            out.extend(_flatten(value, f"{prefix}.{path}" if prefix and path else prefix or path))
        return out
    if isinstance(detail, list):
        out = []
        for index, value in enumerate(detail):
            if isinstance(value, dict | list) and not all(isinstance(v, str) for v in value):
                out.extend(_flatten(value, f"{prefix}[{index}]"))
            else:
                out.extend(_flatten(value, prefix))
        return out
    return [f"{prefix}: {detail}" if prefix else str(detail)]


def spec_error_response(exc: FieldErrors) -> Response:
    only_json = all(e.path == JSON_PATH for e in exc.errors)
    return Response(
        {
            "error": "invalid JSON" if only_json else "invalid job",
            "errors": [str(e) for e in exc.errors],
        },
        status=400,
    )


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if dbbusy.is_busy(exc):
        request = context.get("request")
        if request is not None:
            dbbusy.log_busy(request, exc)
        return Response(
            {"error": dbbusy.BUSY_MESSAGE},
            status=503,
            headers={"Retry-After": dbbusy.retry_after()},
        )
    if isinstance(exc, FieldErrors):
        return spec_error_response(exc)
    if isinstance(exc, ServiceError):
        return Response({"error": str(exc)}, status=exc.status_code)
    if isinstance(exc, RequestDataTooBig):
        request = context.get("request")
        path = request.path_info if request is not None else None
        return Response({"error": too_large_message(path)}, status=413)
    if isinstance(exc, BadRequest):
        body: dict[str, str | list[str]] = {"error": str(exc.detail)}
        if exc.errors:
            body["errors"] = exc.errors
        return Response(body, status=400)
    if isinstance(exc, Http404):
        exc = exceptions.NotFound(str(exc) or "not found")
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied(str(exc) or None)
    response = drf_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, exceptions.ValidationError):
        response.data = {"error": "invalid request", "errors": _flatten(exc.detail)}
    elif isinstance(exc, exceptions.APIException):
        detail = exc.detail
        response.data = {"error": str(detail) if not isinstance(detail, dict | list) else "error"}
        if isinstance(detail, dict | list):
            response.data["errors"] = _flatten(detail)
    return response


# --- Plain Django errors under /api/ ------------------------------------------------------
# DRF answers errors of its own views in JSON; these cover what happens outside them: an
# unknown route, a bad Host header, a method a plain view refuses, a crash, and Django's debug
# pages when PORTAL_DEBUG is on. Same shape: {"error": "..."}.


def is_api_path(path: str) -> bool:
    return path == "/api" or path.startswith("/api/")


def api_error_response(status: int, message: str | None = None) -> JsonResponse:
    return JsonResponse({"error": message or HTTPStatus(status).phrase.lower()}, status=status)


class ApiJsonErrorsMiddleware:
    """First in MIDDLEWARE: an HTML error answer under /api/ becomes JSON, and a Host header
    outside ALLOWED_HOSTS gets a JSON 400 before anything else reads it."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        if not is_api_path(request.path_info):
            return self.get_response(request)
        try:
            request.get_host()
        except DisallowedHost as exc:
            security_log.warning("%s", exc)
            return api_error_response(400, str(exc))
        response = self.get_response(request)
        if (
            response.status_code >= 400
            and not response.streaming
            and response.get("Content-Type", "").startswith("text/html")
        ):
            status = response.status_code
            return api_error_response(
                status, f"not found: {request.path_info}" if status == 404 else None
            )
        return response
