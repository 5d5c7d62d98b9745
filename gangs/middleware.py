"""Every refusal under OpenPAI's routes in OpenPAI's shape, ``{"code", "message"}``.

The portal answers refusals as ``{"error": ..., "errors": [...]}`` (core/api_errors.py), its
guards before any view included (a body above its limit, text a database cannot store, a busy
database, an unknown route or method). OpenPAI's clients read ``code`` and ``message`` (its
REST server's ``Response`` schema): under ``/api/v1/jobs``, ``/api/v1/user/`` and
``/api/v2/jobs`` this middleware, placed outside those guards (portal/settings.py), gives each
such answer the code of OpenPAI's API spec for its status (``NoJobError``, ``ConflictJobError``,
...), the
portal's words as the message and the field problems kept as ``errors``; status and headers
are kept.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from django.http import HttpRequest, JsonResponse
from django.http.response import HttpResponseBase

OPENPAI_PATHS = ("/api/v1/jobs", "/api/v1/user/", "/api/v2/jobs")
# OpenPAI's error code for each status, from its API spec's ``Response`` codes (a body above
# its limit and an unsupported body are invalid parameters there; a busy database is unknown).
CODES = {
    400: "InvalidParametersError",
    401: "UnauthorizedUserError",
    403: "ForbiddenUserError",
    404: "NoJobError",
    405: "NoApiError",
    409: "ConflictJobError",
    413: "InvalidParametersError",
    415: "InvalidParametersError",
}


def openpai_error(status: int, body: dict, *, path: str = "") -> dict:
    """The portal's refusal ``body`` as OpenPAI's ``{"code", "message"}`` (+ ``errors``)."""
    code = CODES.get(status, "UnknownError")
    if status == 404 and not path.startswith("/api/v2/jobs/"):
        code = "NoApiError"  # not a job that is missing: the route
    errors = [str(e) for e in body.get("errors") or ()]
    message = str(body.get("error") or "")
    if errors:
        message = f"{message}: {'; '.join(errors)}" if message else "; ".join(errors)
    answer: dict = {"code": code, "message": message or "error"}
    if errors:
        answer["errors"] = errors
    return answer


class OpenPaiErrorMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        response = self.get_response(request)
        path = request.path_info
        if (
            response.status_code < 400
            or not path.startswith(OPENPAI_PATHS)
            or response.streaming
            or not response.get("Content-Type", "").startswith("application/json")
        ):
            return response
        try:
            body = json.loads(response.content)  # type: ignore[attr-defined]  # not streaming
        except ValueError:
            return response
        if not isinstance(body, dict) or "code" in body:
            return response
        wrapped = JsonResponse(
            openpai_error(response.status_code, body, path=path),
            status=response.status_code,
        )
        for header, value in response.items():
            if header.lower() not in ("content-type", "content-length"):
                wrapped[header] = value
        return wrapped
