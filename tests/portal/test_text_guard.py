"""core.text_guard's rules on their own: what cannot be stored, where it is, how it is shown."""

import ast
import sys
from pathlib import Path

import pytest

from core import text_guard
from core.text_guard import (
    MAX_PROBLEMS,
    NUL_MESSAGE,
    SURROGATE_MESSAGE,
    find_unstorable,
    printable,
    unstorable,
)


@pytest.mark.parametrize(
    "text,why",
    [
        ("plain", None),
        ("tab\t newline\n bell\x07", None),  # other control characters are storable
        ("emoji \U0001f600", None),
        ("a\x00b", NUL_MESSAGE),
        ("\ud800", SURROGATE_MESSAGE),
        ("\udfff tail", SURROGATE_MESSAGE),
        ("\x00\ud800", NUL_MESSAGE),  # one message per string
    ],
)
def test_unstorable(text, why):
    assert unstorable(text) == why


def test_find_unstorable_walks_keys_lists_and_objects_in_order():
    value = {
        "ok": ["fine", {"deep\x00key": 1, "x": ["\ud800"]}],
        "b": "\x00",
        "n": [1, 2.5, None, True],
    }
    assert find_unstorable(value) == [
        ("ok[1].deep\\u0000key", f"the key {NUL_MESSAGE}"),
        ("ok[1].x[0]", SURROGATE_MESSAGE),
        ("b", NUL_MESSAGE),
    ]
    assert find_unstorable("\x00") == [("(document)", NUL_MESSAGE)]
    assert find_unstorable({"clean": ["yes"]}) == []


def test_find_unstorable_is_bounded_and_iterative():
    assert len(find_unstorable(["\x00"] * 1000)) == MAX_PROBLEMS
    deep: object = "\x00"
    for _ in range(sys.getrecursionlimit() * 2):
        deep = [deep]
    ((path, message),) = find_unstorable(deep)
    assert message == NUL_MESSAGE and path.endswith("[0][0]")


def test_printable_escapes_only_what_cannot_be_shown():
    shown = printable("a\x00b\ud800c\té")
    assert shown == "a\\u0000b\\ud800c\té"
    shown.encode("utf-8")  # a lone surrogate would raise here


def test_the_rules_are_standard_library_only():
    """The pure job spec imports this module: nothing at its top level may need Django."""
    tree = ast.parse(Path(text_guard.__file__).read_text())
    for node in tree.body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = (
                [node.module] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
            )
            for name in names:
                top = (name or "").split(".")[0]
                assert top in sys.stdlib_module_names or top == "__future__", name
