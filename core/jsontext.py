"""Parse a job file's text into a Python object, with errors a person can act on.

Job files are hand-written (GPULab's own documentation contains examples with trailing and
missing commas), so a syntax error must say where it is, in plain words (core/json_errors.py): ``invalid JSON
at line 12 column 5: a comma is missing between two items``.
"""

from __future__ import annotations

import json
from typing import Any

from core.errors import DOCUMENT_PATH, JSON_PATH, FieldError
from core.errors import FieldErrors as SpecError
from core.json_errors import json_error_words
from core.text_guard import find_unstorable


def _reject_constant(name: str) -> object:
    # Python's json accepts NaN/Infinity, which are not JSON and cannot be stored in JSON columns.
    raise ValueError(f"{name} is not valid JSON")


def load_json(text: str | bytes) -> dict[str, Any]:
    """Parse ``text`` (str, or UTF-8 bytes with or without a BOM) into a JSON object (a dict).

    Raises SpecError with path ``(json)`` for a syntax error or bad encoding, path
    ``(document)`` when the top level is not an object, and the path of every string (or key)
    that cannot be stored (see check_storable). Duplicate keys keep the last value, as every
    common JSON parser (and GPULab's) does.
    """
    if isinstance(text, bytes | bytearray):
        try:
            text = bytes(text).decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise SpecError.single(
                JSON_PATH, f"not valid UTF-8 (byte {exc.start}): save the file as UTF-8"
            ) from None
    elif not isinstance(text, str):
        raise TypeError(f"load_json expects str or bytes, not {type(text).__name__}")
    else:
        text = text.removeprefix("\ufeff")

    if not text.strip():
        raise SpecError.single(JSON_PATH, "the document is empty")
    try:
        value = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        line, column, words = json_error_words(text, exc)
        raise SpecError.single(
            JSON_PATH, f"invalid JSON at line {line} column {column}: {words}"
        ) from None
    except ValueError as exc:  # from _reject_constant
        raise SpecError.single(JSON_PATH, f"invalid JSON: {exc}") from None
    except RecursionError:
        raise SpecError.single(JSON_PATH, "invalid JSON: nested too deeply") from None
    if not isinstance(value, dict):
        raise SpecError.single(
            DOCUMENT_PATH, f"must be a JSON object ({{...}}), not {json_type_name(value)}"
        )
    check_storable(value)
    return value


def check_storable(value: object) -> None:
    """Raise SpecError naming every string or key that no database can store (a NUL byte, an
    unpaired surrogate: what JSON's "\\u0000" and "\\ud800" escapes decode to).

    Checked before any other rule, so that no later message echoes such text back.
    """
    problems = find_unstorable(value)
    if problems:
        raise SpecError(FieldError(path, message) for path, message in problems)


def json_type_name(value: object) -> str:
    """The JSON name of a parsed value's type, for messages ("an array", "a string", ...)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__
