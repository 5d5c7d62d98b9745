"""Job document kinds besides GPULab's own, registered by the apps that run them.

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
