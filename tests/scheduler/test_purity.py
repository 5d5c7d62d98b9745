"""jobs/scheduler/ is pure: stdlib imports only (and itself, relatively)."""

import ast
import sys
from pathlib import Path

import pytest

import jobs.scheduler

PACKAGE = Path(jobs.scheduler.__file__).parent
FILES = sorted(PACKAGE.rglob("*.py"))
FORBIDDEN = {
    "django",
    "core",
    "accounts",
    "jobs",
    "clusters",
    "portal",
    "reservations",
    "rest_framework",
    "docker",
}


def imported_modules(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, 0
        elif isinstance(node, ast.ImportFrom):
            yield node.module or "", node.level


def test_package_has_modules():
    assert len(FILES) > 5


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_only_stdlib_and_own_package(path):
    tree = ast.parse(path.read_text(), filename=str(path))
    for module, level in imported_modules(tree):
        if level > 0:
            continue  # relative: inside jobs.scheduler
        if module == "jobs.scheduler" or module.startswith("jobs.scheduler."):
            continue
        top = module.split(".")[0]
        assert top not in FORBIDDEN, f"{path.name} imports {module}"
        assert top in sys.stdlib_module_names or top == "__future__", (
            f"{path.name} imports {module}, which is not in the standard library"
        )


def test_relative_imports_stay_inside_the_package():
    for path in FILES:
        depth = len(path.relative_to(PACKAGE).parts) - 1
        for _module, level in imported_modules(ast.parse(path.read_text())):
            assert level <= depth + 1, f"{path.name} imports from outside jobs.scheduler"
