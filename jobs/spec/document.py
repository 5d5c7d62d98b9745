"""One entry point for every job document the portal receives: JSON text or an already parsed
object, version 1 or version 2."""

from __future__ import annotations

from .errors import SpecError
from .jsontext import DOCUMENT_PATH, check_storable, load_json
from .v1 import convert_v1, v1_errors
from .v2 import SpecDefaults, normalize_job

V2_KEY = "request"
V1_KEY = "jobDefinition"


def detect_version(doc: dict) -> int:
    """2 for a document with ``request``, 1 for one with ``jobDefinition``; SpecError otherwise."""
    has_v2, has_v1 = V2_KEY in doc, V1_KEY in doc
    if has_v2 and has_v1:
        raise SpecError.single(
            DOCUMENT_PATH, 'must contain "request" (v2) or "jobDefinition" (v1), not both'
        )
    if has_v2:
        return 2
    if has_v1:
        return 1
    raise SpecError.single(DOCUMENT_PATH, 'must contain "request" (v2) or "jobDefinition" (v1)')


def parse_job_document(source: str | bytes | dict, *, defaults: SpecDefaults) -> tuple[dict, bool]:
    """Return ``(canonical v2 document, was_v1)`` for a job file's text or parsed object.

    A v1 document is converted first; errors found while validating the converted document
    name the v1 fields the user wrote (``jobDefinition.resources.cpuCores``).
    """
    doc = source if isinstance(source, dict) else load_json(source)
    check_storable(doc)  # before conversion: errors name what the user wrote
    if detect_version(doc) == 2:
        return normalize_job(doc, defaults=defaults), False
    converted = convert_v1(doc)
    try:
        return normalize_job(converted, defaults=defaults), True
    except SpecError as exc:
        raise v1_errors(exc) from None
