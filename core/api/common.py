"""Pieces every API view shares: the base view, size-limited body reading, JSON and boolean
parsing with messages that name what was wrong."""

from __future__ import annotations

import uuid
from typing import Any, overload

from django.core.exceptions import RequestDataTooBig
from django.http import Http404, HttpRequest
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.serializers import Serializer
from rest_framework.views import APIView

from core.api.openapi import PortalErrorSerializer
from core.api.renderers import PortalJSONRenderer
from core.api.text import PlainTextRenderer, RawBodyParser
from core.api_errors import BadRequest, PayloadTooLarge
from core.body_limits import body_limit, declared_length, too_large_message
from core.jsontext import load_json

TRUE_WORDS = {"true", "1", "yes", "on"}
FALSE_WORDS = {"false", "0", "no", "off"}


class PortalAPIView(APIView):
    """Base of every API view.

    Unauthenticated callers get 401 with ``WWW-Authenticate: Token`` (DRF would answer 403
    because session authentication, listed first, has no challenge of its own).

    The body of a write is read (and size-checked: 413) before authentication, so that the
    session CSRF check, which looks at form fields, cannot consume the stream first; views
    then read ``request.body`` themselves and never use ``request.data``.
    """

    renderer_classes = [PortalJSONRenderer, PlainTextRenderer]
    parser_classes = [FormParser, MultiPartParser, RawBodyParser]
    # The body of every refusal, as the OpenAPI schema describes it (core/api/openapi.py).
    error_body: type[Serializer[Any]] = PortalErrorSerializer

    def get_authenticate_header(self, request: Request) -> str:
        return super().get_authenticate_header(request) or 'Token realm="api"'

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        if request.method in ("POST", "PUT", "PATCH", "DELETE"):
            read_body(request)
        super().initial(request, *args, **kwargs)


def read_body(request: HttpRequest) -> bytes:
    """The raw request body, refused with 413 above its path's limit (core/body_limits.py).

    DRF's own parsers read the stream directly and skip Django's size check; reading
    ``request.body`` keeps it (Django raises RequestDataTooBig, which becomes 413).
    """
    path = request.path_info
    limit = body_limit(path)
    if limit is not None and declared_length(request) > limit:
        raise PayloadTooLarge(too_large_message(path))
    try:
        body: bytes = request.body
    except RequestDataTooBig:
        raise PayloadTooLarge(too_large_message(path)) from None
    if limit is not None and len(body) > limit:
        raise PayloadTooLarge(too_large_message(path))
    return body


def read_json_object(request: HttpRequest) -> dict[str, Any]:
    """The body parsed as a JSON object; SpecError (400 with line and column) otherwise."""
    return load_json(read_body(request))


def read_text(request: HttpRequest) -> str:
    """A plain-text body (``CANCELLED``), decoded as UTF-8 and stripped."""
    try:
        return read_body(request).decode("utf-8-sig").strip()
    except UnicodeDecodeError:
        raise BadRequest("the body must be UTF-8 text") from None


@overload
def parse_bool(value: str | None, name: str, default: bool = ...) -> bool: ...
@overload
def parse_bool(value: str | None, name: str, default: bool | None) -> bool | None: ...
def parse_bool(value: str | None, name: str, default: bool | None = False) -> bool | None:
    """A query parameter as a boolean (true/false/1/0/yes/no/on/off; empty = true)."""
    if value is None:
        return default
    word = value.strip().lower()
    if word in TRUE_WORDS or word == "":
        return True
    if word in FALSE_WORDS:
        return False
    raise BadRequest(
        f"invalid query parameter {name}",
        [f"{name}: must be true or false, not {value!r}"],
    )


def parse_uuid_or_404(value: str) -> uuid.UUID:
    try:
        return uuid.UUID(str(value))
    except (ValueError, TypeError, AttributeError):
        raise Http404("not found") from None
