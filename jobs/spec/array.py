"""Array submissions: one request body that carries many job documents.

Two forms (docs/api.md, "Array submissions"):

- ``{"jobs": [doc, doc, ...]}``: a list of v1 or v2 job documents;
- ``{"template": doc, "variations": [patch, patch, ...]}``: a parameter sweep. Job ``i`` is the
  template with ``variations[i]`` merged into it as a JSON merge patch (RFC 7386: objects merge
  key by key, ``null`` removes a key, anything else, lists included, replaces), after which
  every ``${index}`` in a string value becomes ``i``.

``expand_array`` turns either form into the list of documents and the name errors are reported
under (``jobs`` or ``variations``), so that a bad item reads ``variations[3].request...``.
"""

from __future__ import annotations

import copy

from core.errors import FieldError

from .checks import SpecError

INDEX_PLACEHOLDER = "${index}"
ARRAY_KEYS = {"jobs", "template", "variations", "project"}


def merge_patch(target, patch):
    """RFC 7386 JSON merge patch of ``patch`` onto ``target`` (neither is modified)."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def _merged(target, patch):
    """``merge_patch`` without copying: the result shares the parts of ``target`` and
    ``patch`` that the merge leaves whole. For ``expand_array``, whose ``substitute_index``
    then builds every container anew: one copy of the template per job instead of two."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = _merged(result.get(key), value)
    return result


def substitute_index(value, index: int):
    """``value`` with every ``${index}`` in its strings (not its keys) replaced by ``index``."""
    if isinstance(value, str):
        return value.replace(INDEX_PLACEHOLDER, str(index))
    if isinstance(value, dict):
        return {key: substitute_index(item, index) for key, item in value.items()}
    if isinstance(value, list):
        return [substitute_index(item, index) for item in value]
    return value


def expand_array(body, *, max_jobs: int) -> tuple[list, str]:
    """``(documents, name)`` for an array body; SpecError naming every shape problem.

    Items are not validated here (a non-object item is left for the caller to report at its
    index); only the envelope is: one of the two forms, a non-empty list, at most ``max_jobs``.
    """
    if not isinstance(body, dict):
        raise SpecError.single(
            "(document)", 'must be {"jobs": [...]} or {"template": {...}, "variations": [...]}'
        )
    errors = [
        FieldError(key, "unknown key (allowed: jobs, template, variations, project)")
        for key in sorted(set(body) - ARRAY_KEYS)
    ]
    has_jobs = "jobs" in body
    has_sweep = "template" in body or "variations" in body
    if has_jobs and has_sweep:
        errors.append(FieldError("jobs", "give either jobs or template with variations, not both"))
    elif not has_jobs and not has_sweep:
        errors.append(FieldError("jobs", "is required (or template with variations)"))
    name = "jobs" if has_jobs else "variations"
    items = body.get(name)
    if not isinstance(items, list):
        if not errors or name in body:
            errors.append(FieldError(name, "must be a list"))
    elif not items:
        errors.append(FieldError(name, "must not be empty"))
    elif len(items) > max_jobs:
        errors.append(FieldError(name, f"at most {max_jobs} jobs per request, not {len(items)}"))
    if has_sweep and not has_jobs and not isinstance(body.get("template"), dict):
        errors.append(FieldError("template", "must be a job document (an object)"))
    if errors:
        raise SpecError(errors)
    assert isinstance(items, list)  # anything else was an error above
    if has_jobs:
        return list(items), name
    template = body["template"]
    documents = []
    for index, variation in enumerate(items):
        if not isinstance(variation, dict):
            documents.append(variation)  # reported at its index by the caller
            continue
        documents.append(substitute_index(_merged(template, variation), index))
    return documents, name
