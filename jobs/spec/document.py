"""One entry point for every job document the portal receives: JSON text or an already parsed
object, GPULab version 1 or version 2, or an OpenPAI job config.

``parse_job_document`` (GPULab only: canonical v2 and whether it was v1) keeps its contract for
its callers; ``parse_any_document`` answers a tagged ``ParsedDocument`` for all three kinds.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import SpecError
from .jsontext import DOCUMENT_PATH, check_storable, load_json
from .openpai import OPENPAI, normalize_openpai
from .v1 import convert_v1, v1_errors
from .v2 import SpecDefaults, normalize_job

V2_KEY = "request"
V1_KEY = "jobDefinition"
# Either key makes an OpenPAI config (the seed requires both): a config missing one of them
# then hears "jobName: is required" rather than that it is no job document at all.
OPENPAI_KEYS = ("jobName", "taskRoles")
NONE_OF_THREE = (
    'must contain "request" (GPULab v2), "jobDefinition" (GPULab v1) or "jobName" and '
    '"taskRoles" (OpenPAI)'
)


def detect_version(doc: dict) -> int | str:
    """2 for a document with ``request``, 1 for one with ``jobDefinition``, ``"openpai"`` for
    one with ``jobName`` or ``taskRoles`` (and neither GPULab key); SpecError otherwise."""
    has_v2, has_v1 = V2_KEY in doc, V1_KEY in doc
    if has_v2 and has_v1:
        raise SpecError.single(
            DOCUMENT_PATH, 'must contain "request" (v2) or "jobDefinition" (v1), not both'
        )
    if has_v2:
        return 2
    if has_v1:
        return 1
    if any(key in doc for key in OPENPAI_KEYS):
        return OPENPAI
    raise SpecError.single(DOCUMENT_PATH, NONE_OF_THREE)


def is_openpai_document(source: object) -> bool:
    """Whether a job file's text or parsed object is an OpenPAI config; False for anything that
    is not even JSON (the GPULab parser then names what is wrong)."""
    if not isinstance(source, dict | str | bytes | bytearray):
        return False
    try:
        doc = source if isinstance(source, dict) else load_json(source)
        return detect_version(doc) == OPENPAI
    except (SpecError, TypeError):
        return False


@dataclass(frozen=True)
class ParsedDocument:
    """``kind`` "gpulab" (``document`` is canonical v2; ``was_v1``) or "openpai" (``document``
    is the canonical OpenPAI config)."""

    kind: str
    document: dict
    was_v1: bool = False


def parse_any_document(source: str | bytes | dict, *, defaults: SpecDefaults) -> ParsedDocument:
    """Parse and validate a GPULab v1/v2 document or an OpenPAI config; SpecError with every
    problem otherwise."""
    doc = source if isinstance(source, dict) else load_json(source)
    check_storable(doc)
    if detect_version(doc) == OPENPAI:
        config = normalize_openpai(
            doc, allowed_registries=defaults.allowed_private_registries, limits=defaults.limits
        )
        return ParsedDocument(OPENPAI, config)
    canonical, was_v1 = parse_job_document(doc, defaults=defaults)
    return ParsedDocument("gpulab", canonical, was_v1)


def parse_job_document(source: str | bytes | dict, *, defaults: SpecDefaults) -> tuple[dict, bool]:
    """Return ``(canonical v2 document, was_v1)`` for a job file's text or parsed object.

    A v1 document is converted first; errors found while validating the converted document
    name the v1 fields the user wrote (``jobDefinition.resources.cpuCores``).
    """
    doc = source if isinstance(source, dict) else load_json(source)
    check_storable(doc)  # before conversion: errors name what the user wrote
    version = detect_version(doc)
    if version == OPENPAI:
        # Callers of this function take GPULab documents only; parse_any_document takes all.
        raise SpecError.single(
            DOCUMENT_PATH, "is an OpenPAI job config: this accepts GPULab v1 or v2 documents only"
        )
    if version == 2:
        return normalize_job(doc, defaults=defaults, storable_checked=True), False
    converted = convert_v1(doc)
    try:
        return normalize_job(converted, defaults=defaults), True
    except SpecError as exc:
        raise v1_errors(exc) from None
