"""Plain-text renderer and a raw-body parser for the GPULab endpoints.

The gpulab-cli sends plain text (``PUT jobs/ID/state/status`` with ``CANCELLED``) and reads plain
text (the uuid answered by ``POST jobs``, logs). Views read the raw body themselves (see
``core.api.common.read_body``); the parser only keeps DRF from refusing an unknown media type
or half-parsing a body while it checks the CSRF token of a session request.
"""

import json
from collections.abc import Mapping
from typing import IO, Any

from rest_framework.parsers import BaseParser
from rest_framework.renderers import BaseRenderer


class PlainTextRenderer(BaseRenderer):
    media_type = "text/plain"
    format = "txt"
    charset = "utf-8"

    def render(
        self,
        data: Any,
        accepted_media_type: str | None = None,
        renderer_context: Mapping[str, Any] | None = None,
    ) -> bytes:
        if data is None:
            return b""
        if isinstance(data, bytes):
            return data
        if isinstance(data, str):
            return data.encode("utf-8")
        return json.dumps(data, ensure_ascii=False).encode("utf-8")


class RawBodyParser(BaseParser):
    """Accepts any media type and returns the body bytes unparsed."""

    media_type = "*/*"

    def parse(  # type: ignore[override]  # the raw bytes, not the parsed mapping DRF's stubs expect
        self,
        stream: IO[Any] | None,
        media_type: str | None = None,
        parser_context: Mapping[str, Any] | None = None,
    ) -> bytes:
        return stream.read() if stream is not None else b""
