"""The API's OpenAPI schema (``GET /api/schema``, drf-spectacular): what every operation says
besides its own success answer.

``PortalAutoSchema`` (REST_FRAMEWORK's DEFAULT_SCHEMA_CLASS) adds to each operation:

- its description from the view's own text only (``extend_schema(description=...)``, the
  method's or the view class's own docstring), never a docstring inherited from a base view;
- the refusals every API view can answer, each with the view's error body
  (``PortalAPIView.error_body``: ``{"error", "errors"}``, Tapis views their envelope): 401 (no or
  wrong credentials; a wrong token is refused even where anyone may call), 403 and 413 on
  writes (a browser session's missing CSRF token; a body above its path's limit), 404 where the
  path names an object, 503 when the database is busy (with ``Retry-After``);
- an error body for every 4xx/5xx a view declares without one
  (``409: OpenApiResponse(description=...)``);
- JSON as the media type of request and response bodies unless the view names another (the
  plain-text renderer and the raw-body parser exist for gpulab-cli's text endpoints, which say
  so).
"""

from __future__ import annotations

import inspect
from typing import Any

from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers
from rest_framework.permissions import AllowAny

JSON = "application/json"
WRITES = ("POST", "PUT", "PATCH", "DELETE")


class PortalErrorSerializer(serializers.Serializer[dict[str, Any]]):
    """Every refused API request: what went wrong and, for rejected input, each problem."""

    error = serializers.CharField(help_text="what went wrong")
    # A field named like Serializer.errors: DRF's metaclass moves it into the declared fields.
    errors = serializers.ListField(  # type: ignore[assignment]
        child=serializers.CharField(),
        required=False,
        help_text='one "path: rule" per problem (rejected input only)',
    )


def refusal(description: str) -> OpenApiResponse:
    """A refusal an operation declares (``responses={409: refusal("...")}``); the schema gives
    it the view's error body."""
    return OpenApiResponse(description=description)


class PortalAutoSchema(AutoSchema):
    # drf-spectacular's override takes no arguments (DRF's stubs describe DRF's own inspector).
    def get_description(self) -> str:  # type: ignore[override]
        # AutoSchema would take inspect.getdoc of the view, which inherits the base view's
        # docstring (written for the portal's developers) when the view has none of its own.
        handler = getattr(self.view, self.method.lower(), None)
        own = getattr(handler, "__doc__", None) or vars(type(self.view)).get("__doc__")
        return inspect.cleandoc(own) if own else ""

    def map_parsers(self) -> list[Any]:
        return [JSON]

    def map_renderers(self, attribute: str) -> list[Any]:
        return [JSON] if attribute == "media_type" else ["json"]

    def _allows_anyone(self) -> bool:
        return any(isinstance(p, AllowAny) for p in self.view.get_permissions())

    def _common_refusals(self) -> dict[str, str]:
        refusals = {
            "401": (
                "a wrong API token, Tapis token or login certificate"
                if self._allows_anyone()
                else "not logged in: no API token, Tapis token, login certificate or session, "
                "or a wrong one"
            ),
            "503": "the database is busy: try again after Retry-After seconds",
        }
        if "{" in self.path:
            refusals["404"] = "no such object, or one you may not see"
        if self.method in WRITES:
            refusals["403"] = "not allowed (a browser session also needs its CSRF token)"
            refusals["413"] = "the request body is above this path's limit"
        return refusals

    def _error_content(self) -> dict[str, Any]:
        body = getattr(self.view, "error_body", PortalErrorSerializer)
        response: dict[str, Any] = self._get_response_for_code(  # type: ignore[no-untyped-call]
            body, "400", [JSON]
        )
        return dict(response["content"])

    def _get_response_bodies(self, direction: Any = "response") -> dict[str, Any]:
        responses: dict[str, Any] = super()._get_response_bodies(direction)
        for code, description in self._common_refusals().items():
            responses.setdefault(code, {"description": description})
        for code, response in responses.items():
            if code >= "400" and "content" not in response:
                response["content"] = self._error_content()
        return dict(sorted(responses.items()))
