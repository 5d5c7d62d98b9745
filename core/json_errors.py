"""Plain words for JSON syntax errors, at the line where the mistake is.

Python's parser reports a trailing comma (``{"a": 1,}``) at the next token, on the next line,
as "Expecting property name enclosed in double quotes". People editing a job file need the
line of the comma and the word "trailing comma"; the same for the other usual slips.
"""

from __future__ import annotations

import json

_PLAIN = {
    "Expecting ',' delimiter": "a comma is missing between two items",
    "Expecting ':' delimiter": 'a colon is missing after a key ("key": value)',
    "Expecting property name enclosed in double quotes": 'keys must be in double quotes ("key")',
    "Expecting value": "a value is missing here, or is not JSON (strings need double quotes)",
    "Extra data": "there is more text after the end of the document",
    "Unterminated string starting at": "a string is not closed (a double quote is missing)",
    "Invalid control character at": "a line break or tab inside a string: write \\n or \\t",
    "Invalid \\escape": "an invalid backslash escape in a string (write \\\\ for a backslash)",
}


def _line_column(text: str, pos: int) -> tuple[int, int]:
    line = text.count("\n", 0, pos) + 1
    column = pos - (text.rfind("\n", 0, pos) + 1) + 1
    return line, column


def json_error_words(text: str, error: json.JSONDecodeError) -> tuple[int, int, str]:
    """``(line, column, message)`` of a JSON syntax error, in plain words."""
    pos = error.pos
    if pos < len(text) and text[pos] in "}]":
        back = pos - 1
        while back >= 0 and text[back] in " \t\r\n":
            back -= 1
        if back >= 0 and text[back] == ",":
            line, column = _line_column(text, back)
            closer = "object" if text[pos] == "}" else "list"
            return line, column, f"trailing comma: remove the ',' before the end of the {closer}"
    message = _PLAIN.get(error.msg, error.msg)
    if error.msg.startswith("Expecting") and text[pos : pos + 1] == "'":
        message = "strings and keys need double quotes, not single quotes"
    return error.lineno, error.colno, message
