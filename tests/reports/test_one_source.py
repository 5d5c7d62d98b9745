"""Fair share, the limits and the reports read a run's interval through one function: none of
them works out a run's end (``run_end_of``) or its clipped seconds by itself."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
READERS = [
    "jobs/scheduler_bridge/usage.py",
    "jobs/scheduler_bridge/quota_usage.py",
    *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "reports").rglob("*.py")),
]


def names_used(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    used = {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    return used | {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}


@pytest.mark.parametrize("path", READERS)
def test_no_reader_computes_a_run_end_of_its_own(path):
    assert "run_end_of" not in names_used(ROOT / path), path


def test_the_three_readers_call_the_interval_function():
    assert "held_interval" in names_used(ROOT / "jobs/scheduler_bridge/usage.py")
    for path in ("jobs/scheduler_bridge/quota_usage.py", "reports/accounting.py"):
        assert "held_seconds" in names_used(ROOT / path), path
    for path in ("jobs/scheduler_bridge/quota_usage.py", "reports/accounting.py"):
        tree = ast.parse((ROOT / path).read_text())
        from_models = {
            alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module == "jobs.models"
            for alias in node.names
        }
        assert "held_seconds" in from_models, path


def test_docs_name_every_column_of_the_export():
    from reports.accounting import FIGURE_COLUMNS, SIZE_COLUMNS

    text = (ROOT / "docs/reports.md").read_text()
    for column in (*FIGURE_COLUMNS, *SIZE_COLUMNS):
        assert f"`{column}`" in text, column
