"""One entry point for every job document the portal receives: JSON text or an already parsed
object, GPULab version 1 or version 2, or a document of a kind an app registered
(jobs/spec/kinds.py: gangs registers OpenPAI job configs).

``parse_job_document`` (GPULab only: canonical v2 and whether it was v1) keeps its contract for
its callers; ``parse_any_document`` answers a tagged ``ParsedDocument`` for every kind.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.errors import DOCUMENT_PATH
from core.jsontext import check_storable, load_json

from .checks import SpecError
from .kinds import DocumentKind, document_kind_named, document_kinds
from .v1 import convert_v1, v1_errors
from .v2 import SpecDefaults, normalize_job

V2_KEY = "request"
V1_KEY = "jobDefinition"
GPULAB = "gpulab"


def _none_of_these() -> str:
    """What a document with no known key must contain: GPULab's keys, then each kind's (a
    config missing one of a kind's keys hears what it lacks, not that it is no document)."""
    gpulab = '"request" (GPULab v2), "jobDefinition" (GPULab v1)'
    others = [kind.keys_hint for kind in document_kinds()]
    if not others:
        return 'must contain "request" (GPULab v2) or "jobDefinition" (GPULab v1)'
    return f"must contain {gpulab} or {' or '.join(others)}"


def detect_version(doc: dict) -> int | str:
    """2 for a document with ``request``, 1 for one with ``jobDefinition``, a registered
    kind's name (``"openpai"``) for one with any of its keys (and neither GPULab key);
    SpecError otherwise."""
    has_v2, has_v1 = V2_KEY in doc, V1_KEY in doc
    if has_v2 and has_v1:
        raise SpecError.single(
            DOCUMENT_PATH, 'must contain "request" (v2) or "jobDefinition" (v1), not both'
        )
    if has_v2:
        return 2
    if has_v1:
        return 1
    for kind in document_kinds():
        if any(key in doc for key in kind.keys):
            return kind.name
    raise SpecError.single(DOCUMENT_PATH, _none_of_these())


def document_kind_of(source: object) -> DocumentKind | None:
    """The registered kind of a job file's text or parsed object; None for a GPULab document
    and for anything that is not even JSON (the GPULab parser then names what is wrong)."""
    if not isinstance(source, dict | str | bytes | bytearray):
        return None
    try:
        doc = source if isinstance(source, dict) else load_json(source)
        return document_kind_named(detect_version(doc))
    except (SpecError, TypeError):
        return None


@dataclass(frozen=True)
class ParsedDocument:
    """``kind`` "gpulab" (``document`` is canonical v2; ``was_v1``) or a registered kind's
    name (``document`` is its canonical form, e.g. the canonical OpenPAI config)."""

    kind: str
    document: dict
    was_v1: bool = False


def parse_any_document(source: str | bytes | dict, *, defaults: SpecDefaults) -> ParsedDocument:
    """Parse and validate a GPULab v1/v2 document or one of a registered kind; SpecError with
    every problem otherwise."""
    doc = source if isinstance(source, dict) else load_json(source)
    check_storable(doc)
    kind = document_kind_named(detect_version(doc))
    if kind is not None:
        return ParsedDocument(kind.name, kind.normalize(doc, defaults=defaults))
    canonical, was_v1 = parse_job_document(doc, defaults=defaults)
    return ParsedDocument(GPULAB, canonical, was_v1)


def parse_job_document(source: str | bytes | dict, *, defaults: SpecDefaults) -> tuple[dict, bool]:
    """Return ``(canonical v2 document, was_v1)`` for a job file's text or parsed object.

    A v1 document is converted first; errors found while validating the converted document
    name the v1 fields the user wrote (``jobDefinition.resources.cpuCores``).
    """
    doc = source if isinstance(source, dict) else load_json(source)
    check_storable(doc)  # before conversion: errors name what the user wrote
    version = detect_version(doc)
    kind = document_kind_named(version)
    if kind is not None:
        # Callers of this function take GPULab documents only; parse_any_document takes all.
        raise SpecError.single(
            DOCUMENT_PATH, f"is {kind.title}: this accepts GPULab v1 or v2 documents only"
        )
    if version == 2:
        return normalize_job(doc, defaults=defaults, storable_checked=True), False
    converted = convert_v1(doc)
    try:
        return normalize_job(converted, defaults=defaults), True
    except SpecError as exc:
        raise v1_errors(exc) from None
