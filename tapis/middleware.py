"""Every answer under ``/api/tapis/`` in Tapis' envelope, refusals made before a view included.

The Tapis views wrap their own errors (``tapis.api.views.tapis_exception_handler``); the
portal's guards in front of every view answer in the portal's shape before a view runs: a body
above its path's limit (413, core/body_limits.py), text a database cannot store (400,
core/text_guard.py), a busy database (503, core/dbbusy.py), an unknown route (404). This
middleware, placed outside those guards, gives their answers under ``/api/tapis/`` the envelope
Tapis clients read (``status: "error"``), with the same status and headers.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from django.http import HttpRequest, JsonResponse
from django.http.response import HttpResponseBase

from tapis.shapes import error_envelope

TAPIS_PATH = "/api/tapis/"


class TapisErrorEnvelopeMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        response = self.get_response(request)
        if (
            response.status_code < 400
            or not request.path_info.startswith(TAPIS_PATH)
            or response.streaming
            or not response.get("Content-Type", "").startswith("application/json")
        ):
            return response
        try:
            body = json.loads(response.content)  # type: ignore[attr-defined]  # not streaming
        except ValueError:
            return response
        if not isinstance(body, dict) or "error" not in body or "status" in body:
            return response  # already an envelope (a Tapis view's own answer)
        wrapped = JsonResponse(error_envelope(body), status=response.status_code)
        for header, value in response.items():
            if header.lower() not in ("content-type", "content-length"):
                wrapped[header] = value
        return wrapped
