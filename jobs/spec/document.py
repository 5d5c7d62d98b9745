"""One entry point for every job document the portal receives: JSON text or an already parsed
object, GPULab version 1 or version 2, or a document of a kind an app registered (the
registry at the end of this module: gangs registers OpenPAI job configs).

``parse_job_document`` (GPULab only: canonical v2 and whether it was v1) keeps its contract for
its callers; ``parse_any_document`` answers a tagged ``ParsedDocument`` for every kind.

The kinds besides GPULab's own: registered by the apps that run them.

jobs reads GPULab v1 and v2 documents itself. An app one floor above it (gangs: OpenPAI job
configs) registers its kind from its ``AppConfig.ready``: the keys that tell such a document
apart, how to validate one into its canonical form, how to submit one, and what pages say of
it. jobs' entry points for a document (``detect_version``, ``parse_any_document``,
``job_submit``, the Create Job page and its convert answer) ask this registry, so jobs never
imports the app.

Standard library only, like the rest of jobs/spec: the callables are the app's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from core.errors import DOCUMENT_PATH
from core.jsontext import check_storable, load_json

from .checks import SpecError
from .v1 import convert_v1, v1_errors
from .v2 import SpecDefaults, normalize_job

# --- the kinds besides GPULab's own -----------------------------------------------------------


@dataclass(frozen=True)
class DocumentKind:
    # What ``detect_version`` answers and ``ParsedDocument.kind`` holds ("openpai").
    name: str
    # A document with any of these top-level keys (and neither GPULab key) is of this kind.
    keys: tuple[str, ...]
    # How refusals name it: 'is an OpenPAI job config: ...'.
    title: str
    # How "not a job document" names its keys: '"jobName" and "taskRoles" (OpenPAI)'.
    keys_hint: str
    # ``normalize(doc, defaults=SpecDefaults)``: the canonical form, or SpecError.
    normalize: Callable[..., dict]
    # ``submit(user=, project=, document=, hold=, now=)``: the (first) Job stored, or
    # SpecError naming the kind's own fields. Membership is checked before it is called.
    submit: Callable[..., Any]
    # ``summary(canonical)``: what pages show of a valid document (the Create Job page and
    # its convert answer): ``{"taskRoles": [...], "runnable": bool, "notice": str}``.
    summary: Callable[[dict], dict]
    # Rendered under the Create Job page's editor (with ``document_summary``); "" for none.
    create_template: str = ""
    # ``shown(canonical)``: the canonical form as the API answers it (credentials masked).
    shown: Callable[[dict], dict] = dict
    # ``submitted(job)``: what the Create Job page says of the (first) Job ``submit`` stored
    # ("OpenPAI job pai submitted: 4 tasks in 2 task roles ..."); None: "Job <name> submitted".
    submitted: Callable[[Any], str] | None = None


_KINDS: dict[str, DocumentKind] = {}


def document_kind_register(kind: DocumentKind) -> None:
    """Register ``kind`` (again on a second ready(): the same name replaces the entry)."""
    if kind.name in ("gpulab", 1, 2):
        raise ValueError(f"{kind.name!r} is GPULab's own")
    _KINDS[kind.name] = kind


def document_kinds() -> tuple[DocumentKind, ...]:
    return tuple(_KINDS.values())


def document_kind_named(name: object) -> DocumentKind | None:
    return _KINDS.get(name) if isinstance(name, str) else None


# --- one entry point for every document ------------------------------------------------------

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
