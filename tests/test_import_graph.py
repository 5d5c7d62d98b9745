"""The import graph of the project's packages, read by grimp (no Django, no database).

- No import cycle between modules: a cycle hidden by an import inside a function counts too
  (grimp reads every import statement, wherever it is).
- No two rooms of jobs import each other (a package-level loop), and the rooms import each
  other only downwards in the order of jobs' rooms contract: the same rule as ``lint-imports``,
  counted here from grimp's graph so that the two cannot both be wrong the same way.
- No import of a project module inside a function in jobs/ (the way cycles used to be hidden),
  except where a comment in ALLOWED says why.
"""

import ast
import importlib.util
import tomllib
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parent.parent
# Every first-party package: the import contract's root packages (pyproject.toml).
PACKAGES = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"][
    "root_packages"
]
# Imports inside a function that are allowed, by file: why they cannot be at the top.
ALLOWED = {
    # AppConfig.ready() is where Django wants imports that need the loaded models.
    "jobs/apps.py",
}


@pytest.fixture(scope="module")
def graph():
    return grimp.build_graph(*PACKAGES, cache_dir=None)


def _cycles(graph) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    modules = sorted(graph.modules)
    edges = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in modules:
        if root in index:
            continue
        work = [(root, iter(edges[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(edges[child])))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_packages_are_found():
    assert {"jobs", "clusters", "reservations"} <= set(PACKAGES)
    assert all((ROOT / name / "__init__.py").exists() for name in PACKAGES)
    assert importlib.util.find_spec("jobs.scheduler_bridge") is not None


def test_no_import_cycle_between_modules(graph):
    assert "jobs.user_actions.services" in graph.modules  # the graph is the real one
    cycles = _cycles(graph)
    assert cycles == [], "\n".join(" <-> ".join(c) for c in cycles)


def test_the_cycle_finder_finds_a_cycle():
    graph = grimp.ImportGraph()
    for a, b in [("p.a", "p.b"), ("p.b", "p.c"), ("p.c", "p.a"), ("p.c", "p.d")]:
        graph.add_import(importer=a, imported=b)
    assert _cycles(graph) == [["p.a", "p.b", "p.c"]]


def test_the_scheduler_bridge_never_imports_the_user_actions(graph):
    chain = graph.find_shortest_chain(
        importer="jobs.scheduler_bridge.apply", imported="jobs.user_actions.services"
    )
    assert chain is None, chain


def _room_imports(graph, package: str) -> set[tuple[str, str]]:
    """(importer's room, imported's room) for every import between two rooms of ``package``."""

    def room(module: str) -> str | None:
        parts = module.split(".")
        return parts[1] if parts[0] == package and len(parts) > 1 else None

    pairs = set()
    for module in graph.modules:
        for imported in graph.find_modules_directly_imported_by(module):
            a, b = room(module), room(imported)
            if a and b and a != b:
                pairs.add((a, b))
    return pairs


def _jobs_room_levels() -> dict[str, int]:
    """Each room's layer in jobs' rooms contract, 0 for the top one."""
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    (layers,) = [c["layers"] for c in contracts["contracts"] if c.get("containers") == ["jobs"]]
    return {name.strip(): level for level, layer in enumerate(layers) for name in layer.split("|")}


def test_no_two_rooms_of_jobs_import_each_other(graph):
    pairs = _room_imports(graph, "jobs")
    assert ("execution", "models") in pairs  # the graph holds the rooms' imports
    loops = sorted((a, b) for a, b in pairs if (b, a) in pairs and a < b)
    assert loops == []


def test_jobs_rooms_import_only_rooms_below_them(graph):
    level = _jobs_room_levels()
    rooms = {room for pair in _room_imports(graph, "jobs") for room in pair} - {"migrations"}
    assert rooms <= set(level), f"rooms the contract does not place: {rooms - set(level)}"
    upward = sorted(
        (a, b)
        for a, b in _room_imports(graph, "jobs")
        if a in level and b in level and level[b] <= level[a]
    )
    assert upward == []


def test_the_room_loop_finder_finds_a_loop():
    graph = grimp.ImportGraph()
    for a, b in [("p.a.x", "p.b.y"), ("p.b.z", "p.a.w"), ("p.c", "p.a.x")]:
        graph.add_import(importer=a, imported=b)
    pairs = _room_imports(graph, "p")
    assert sorted((a, b) for a, b in pairs if (b, a) in pairs and a < b) == [("a", "b")]


def _function_imports(path: Path) -> list[str]:
    """``line: module`` of every import of a project module inside a function."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for func in ast.walk(tree):
        if not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in ast.walk(func):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            for name in names:
                if name.split(".")[0] in PACKAGES:
                    found.append(f"{node.lineno}: {name}")
    return found


def test_no_project_import_inside_a_function_in_jobs():
    offending = {}
    for path in sorted((ROOT / "jobs").rglob("*.py")):
        relative = path.relative_to(ROOT).as_posix()
        if relative in ALLOWED or "/migrations/" in relative:
            continue
        if found := _function_imports(path):
            offending[relative] = found
    assert offending == {}


def test_the_function_import_finder_finds_one(tmp_path):
    source = tmp_path / "m.py"
    source.write_text("import os\n\ndef f():\n    import json\n    from jobs.models import Job\n")
    assert _function_imports(source) == ["5: jobs.models"]
