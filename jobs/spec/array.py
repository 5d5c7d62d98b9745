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
import itertools
import json

from core.errors import DOCUMENT_PATH, JSON_PATH, FieldError

from .checks import SpecError
from .document import parse_job_document

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


# --- sweeps written as a parameter grid or a list (Create Job's Sweep section) ----------------
#
# A parameter is a dotted path into the job document (``request.docker.environment.LR``,
# ``description``). A value is read as JSON when it is a whole number, true, false, null, a
# quoted string, a list or an object; anything else is its own text, so ``0.1`` stays the
# string "0.1" (an environment value may not be a float, docs/gpulab-format.md).

GRID_FIELD = "sweep_grid"
LIST_FIELD = "sweep_list"
_JSON_STARTS = ('"', "[", "{")
_JSON_WORDS = {"true", "false", "null"}


def sweep_value(text: str):
    """One value as the grid or list writes it (see above)."""
    text = text.strip()
    if text.startswith(_JSON_STARTS) or text in _JSON_WORDS or _is_whole_number(text):
        try:
            return json.loads(text)
        except ValueError:
            return text
    return text


def _is_whole_number(text: str) -> bool:
    return text.lstrip("-").isdigit()


def path_patch(path: str, value) -> dict:
    """``{"request": {"docker": {"environment": {"LR": value}}}}`` for
    ``request.docker.environment.LR``: a merge patch that sets one value."""
    patch = value
    for key in reversed(path.split(".")):
        patch = {key: patch}
    return patch


def _path_problem(path: str) -> str | None:
    if not path:
        return "a parameter needs a path, e.g. request.docker.environment.LR"
    if any(not key.strip() or key != key.strip() for key in path.split(".")):
        return f"{path!r} is not a dotted path (e.g. request.docker.environment.LR)"
    return None


def _assignment(text: str, field: str, line: int, errors: list) -> tuple[str, str] | None:
    path, equals, values = text.partition("=")
    path = path.strip()
    if not equals:
        errors.append(FieldError(field, f"line {line}: write path = value"))
        return None
    if problem := _path_problem(path):
        errors.append(FieldError(field, f"line {line}: {problem}"))
        return None
    return path, values.strip()


def _lines(text: str):
    """(line number, text) of the lines that say something (blank lines and # comments not)."""
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip() and not line.lstrip().startswith("#"):
            yield number, line.strip()


def grid_parse(text: str, *, max_jobs: int) -> list[tuple[str, list]]:
    """``[(path, values), ...]`` from one ``path = value, value, ...`` line per parameter (or
    ``path = [JSON list]``). SpecError naming ``sweep_grid`` and the line; a grid of more than
    ``max_jobs`` combinations is refused before any is made."""
    errors: list[FieldError] = []
    grid: list[tuple[str, list]] = []
    seen: set[str] = set()
    for number, line in _lines(text):
        found = _assignment(line, GRID_FIELD, number, errors)
        if found is None:
            continue
        path, raw = found
        values: list
        if raw.startswith("["):
            listed = sweep_value(raw)
            values = listed if isinstance(listed, list) else [raw]
        else:
            values = [sweep_value(part) for part in raw.split(",") if part.strip()]
        if not values:
            errors.append(FieldError(GRID_FIELD, f"line {number}: {path} has no values"))
        elif path in seen:
            errors.append(FieldError(GRID_FIELD, f"line {number}: {path} is given twice"))
        else:
            seen.add(path)
            grid.append((path, values))
    if not errors and not grid:
        errors.append(FieldError(GRID_FIELD, "give at least one parameter: path = value, value"))
    size = 1
    for _path, values in grid:
        size *= len(values)
    if size > max_jobs:
        sizes = " x ".join(str(len(values)) for _path, values in grid)
        errors.append(
            FieldError(GRID_FIELD, f"{sizes} = {size} jobs: at most {max_jobs} jobs per sweep")
        )
    if errors:
        raise SpecError(errors)
    return grid


def grid_variations(grid: list[tuple[str, list]]) -> list[dict]:
    """The cartesian product of the grid as merge patches, the first parameter varying
    slowest (``LR = 0.1, 0.01`` and ``BATCH = 32, 64``: 0.1/32, 0.1/64, 0.01/32, 0.01/64)."""
    variations = []
    for combination in itertools.product(*(values for _path, values in grid)):
        patch: dict = {}
        for (path, _values), value in zip(grid, combination, strict=True):
            patch = merge_patch(patch, path_patch(path, value))
        variations.append(patch)
    return variations


def list_parse(text: str, *, max_jobs: int) -> list[dict]:
    """One merge patch per line: a JSON object, or ``path = value; path = value``. SpecError
    naming ``sweep_list`` and the line."""
    errors: list[FieldError] = []
    variations: list[dict] = []
    for number, line in _lines(text):
        if line.startswith("{"):
            try:
                patch = json.loads(line)
            except json.JSONDecodeError as error:
                errors.append(FieldError(LIST_FIELD, f"line {number}: not JSON ({error.msg})"))
                continue
            variations.append(patch)
            continue
        patch = {}
        for part in line.split(";"):
            if not part.strip():
                continue
            found = _assignment(part, LIST_FIELD, number, errors)
            if found is not None:
                patch = merge_patch(patch, path_patch(found[0], sweep_value(found[1])))
        variations.append(patch)
    if not errors and not variations:
        errors.append(FieldError(LIST_FIELD, "give at least one line (one job each)"))
    elif len(variations) > max_jobs:
        errors.append(
            FieldError(LIST_FIELD, f"{len(variations)} lines: at most {max_jobs} jobs per sweep")
        )
    if errors:
        raise SpecError(errors)
    return variations


SWEEP_MODES = ("grid", "list")
MODE_FIELD = "sweep_mode"


def is_array_body(document) -> bool:
    """A pasted array body (either form) rather than one job document."""
    return (
        isinstance(document, dict)
        and not {"request", "jobDefinition"} & set(document)
        and bool({"jobs", "template", "variations"} & set(document))
    )


def sweep_body(document, *, mode: str, grid: str, listed: str, max_jobs: int) -> dict | None:
    """What Create Job submits as one array: a pasted array body as it is, or the job as the
    template with the variations its Sweep section gives (``mode`` "grid" or "list"); None
    for one job. SpecError naming the Sweep field at fault."""
    if is_array_body(document):
        if mode in SWEEP_MODES:
            raise SpecError.single(
                MODE_FIELD,
                "the document is already a sweep (template and variations): choose One job",
            )
        return document
    if mode not in SWEEP_MODES:
        return None
    if mode == "grid":
        variations = grid_variations(grid_parse(grid, max_jobs=max_jobs))
    else:
        variations = list_parse(listed, max_jobs=max_jobs)
    return {"template": sweep_template(document), "variations": variations}


def sweep_template(document: dict) -> dict:
    """The job as a sweep's template: its name gains ``-${index}`` unless it has one, so the
    sweep's jobs are told apart (``train-0``, ``train-1``, ...)."""
    name = document.get("name")
    if isinstance(name, str) and INDEX_PLACEHOLDER not in name:
        return {**document, "name": f"{name}-{INDEX_PLACEHOLDER}"}
    return document


def _leaves(value, prefix: str, into: dict) -> dict:
    if isinstance(value, dict) and value:
        for key, item in value.items():
            _leaves(item, f"{prefix}.{key}" if prefix else str(key), into)
    else:
        into[prefix] = value
    return into


def differing_values(documents: list) -> tuple[list[str], list[list]]:
    """``(paths, rows)``: the dotted paths whose value is not the same in every document, and
    each document's values at them (``MISSING`` where it has none): what a preview shows."""
    flat = [_leaves(doc, "", {}) if isinstance(doc, dict) else {"": doc} for doc in documents]
    paths: dict[str, None] = {}
    for leaves in flat:
        paths.update(dict.fromkeys(leaves))

    def seen(leaves: dict, path: str) -> str | None:
        return json.dumps(leaves[path], sort_keys=True) if path in leaves else None

    differing = [path for path in paths if len({seen(leaves, path) for leaves in flat}) > 1]
    rows = [[leaves.get(path, MISSING) for path in differing] for leaves in flat]
    return differing, rows


def shown_value(value) -> str:
    """A value as a preview's cell shows it: text as it is, anything else as JSON."""
    if value is MISSING or isinstance(value, str):
        return str(value)
    return json.dumps(value, ensure_ascii=False)


def array_problems(documents: list, name: str, *, defaults) -> list[FieldError]:
    """Every expanded job's own spec errors (``variations[3].request...``), found before
    anything is submitted (the submit checks the registered slaves too)."""
    problems: list[FieldError] = []
    for index, document in enumerate(documents):
        if not isinstance(document, dict):
            problems.append(FieldError(f"{name}[{index}]", "must be a job document (an object)"))
            continue
        try:
            parse_job_document(document, defaults=defaults)
        except SpecError as failed:
            for item in failed.errors:
                whole = item.path in (DOCUMENT_PATH, JSON_PATH)  # the item as a whole
                path = f"{name}[{index}]" + ("" if whole else f".{item.path}")
                problems.append(FieldError(path, item.message))
    return problems


class _Missing:
    def __repr__(self) -> str:
        return "(none)"

    __str__ = __repr__


MISSING = _Missing()  # a document without a value at a path others have
