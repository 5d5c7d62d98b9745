"""Request body limits per path: ``PORTAL_MAX_BODY_BYTES`` everywhere, or the limit of the
longest prefix of ``PORTAL_MAX_BODY_BYTES_BY_PATH`` that the path starts with.

Django's own check (``DATA_UPLOAD_MAX_MEMORY_SIZE``) is set to the largest of them; the
middleware holds every path to its own limit by the declared length, before anything reads the
body, and ``core.api.common.read_body`` checks the bytes actually read (a body sent without a
length). Under ``/api/`` the refusal is the API's JSON 413, elsewhere a short text page.
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.http.response import HttpResponseBase


def body_limit(path: str) -> int:
    """The most bytes a request body to ``path`` may have."""
    by_path = getattr(settings, "PORTAL_MAX_BODY_BYTES_BY_PATH", None) or {}
    best = max((prefix for prefix in by_path if path.startswith(prefix)), key=len, default=None)
    # portal.settings makes it the largest of the limits: never None there.
    ceiling: int = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    limit: int | None = (
        by_path[best] if best is not None else getattr(settings, "PORTAL_MAX_BODY_BYTES", None)
    )
    if limit is None:
        return ceiling
    return limit if ceiling is None else min(limit, ceiling)


def too_large_message(path: str | None = None) -> str:
    limit = body_limit(path) if path is not None else settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    return f"request body too large (at most {limit} bytes)"


def declared_length(request: HttpRequest) -> int:
    try:
        return int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return 0


class BodyLimitMiddleware:
    """413 for a body declared larger than its path's limit, before anything reads it."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        path = request.path_info
        if declared_length(request) > body_limit(path):
            message = too_large_message(path)
            if path == "/api" or path.startswith("/api/"):
                return JsonResponse({"error": message}, status=413)
            return HttpResponse(
                message[0].upper() + message[1:] + ".\n",
                status=413,
                content_type="text/plain; charset=utf-8",
            )
        return self.get_response(request)
