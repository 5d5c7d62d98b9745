"""docs/architecture.md and the README's map tell the floors the import contract enforces.

The contract (``[tool.importlinter]`` in pyproject.toml, run by ``lint-imports``) is the source:
its layers name the app packages and their order, and jobs' rooms contract the rooms of jobs.
These tests fail when a package or a room is added, renamed or moved in the contract and the
documents still tell the old house, and when a document names a package or a path that does not
exist. No Django, no database.
"""

import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ARCHITECTURE = ROOT / "docs" / "architecture.md"
README = ROOT / "README.md"
CONFIG = tomllib.loads((ROOT / "pyproject.toml").read_text())


def _contract(kind: str, container: str | None = None) -> dict:
    """The one contract of ``kind``: the apps' (no ``containers``), or ``container``'s own."""
    wanted = [container] if container else None
    (contract,) = [
        c
        for c in CONFIG["tool"]["importlinter"]["contracts"]
        if c["type"] == kind and c.get("containers") == wanted
    ]
    return contract


LAYERS = _contract("layers")["layers"]  # top floor (portal) first
# jobs' rooms, top room first; a layer may hold sibling rooms ("selectors | spec").
ROOM_LAYERS = _contract("layers", "jobs")["layers"]
ROOM_GROUPS = [[name.strip() for name in layer.split("|")] for layer in ROOM_LAYERS]
# A layer may hold sibling apps ("tapis | ssh": independent, neither imports the other).
GROUPS = [[name.strip() for name in layer.split("|")] for layer in LAYERS]  # top floor first
FLOORS = [name for group in reversed(GROUPS) for name in group]  # bottom floor (core) first
LEVEL = {name: level for level, group in enumerate(reversed(GROUPS)) for name in group}


def _bottom_first(names: list[str]) -> bool:
    """``names`` are the floors, each once, bottom floor first (siblings in any order)."""
    levels = [LEVEL[name] for name in names]
    return sorted(names) == sorted(FLOORS) and levels == sorted(levels)


def _code_block_after(text: str, heading: str) -> str:
    """The first fenced code block after ``heading``."""
    rest = text[text.index(heading) :]
    return rest.split("```", 2)[1]


def _names_in(text: str) -> set[str]:
    """The floors a piece of prose or a table cell names ("any app", "everything": all)."""
    if "any app" in text or "everything" in text:
        return set(FLOORS)
    return set(re.findall(r"[a-z_]+", text)) & set(FLOORS)


def test_the_contract_names_every_package_once():
    # Every top-level package but the tests and the benchmarks (developer tools, not installed).
    packages = {p.parent.name for p in ROOT.glob("*/__init__.py")} - {"tests", "bench"}
    assert sorted(FLOORS) == sorted(set(FLOORS)), "a floor named twice"
    assert set(FLOORS) == set(CONFIG["tool"]["importlinter"]["root_packages"])
    assert set(FLOORS) == packages, "every top-level package is a floor of the contract"
    installed = {p.rstrip("*") for p in CONFIG["tool"]["setuptools"]["packages"]["find"]["include"]}
    assert installed == set(FLOORS)
    assert set(_contract("acyclic_siblings")["ancestors"]) == set(FLOORS)
    assert set(CONFIG["tool"]["mypy"]["files"]) == set(FLOORS)


def test_architecture_floor_diagram_is_the_contract():
    """Floors top first, one arrow between floors; sibling apps of a floor on lines of their own
    with no arrow between them."""
    block = _code_block_after(ARCHITECTURE.read_text(), "# Architecture")
    shown: list[list[str]] = [[]]
    for line in block.splitlines():
        if line.strip() == "↓":
            shown.append([])
        elif line[:1].strip():
            shown[-1].append(line.split()[0])
    assert [sorted(group) for group in shown] == [sorted(group) for group in GROUPS]


def test_architecture_import_table_is_the_contract():
    text = ARCHITECTURE.read_text()
    table = text[text.index("## What each package may import") :].split("\n\n")[1]
    rows = {}
    for line in table.splitlines()[2:]:
        package, may, never = (cell.strip() for cell in line.strip("|").split("|"))
        rows[package.strip("`")] = (may, never)
    assert _bottom_first([p for p in rows if "." not in p])
    bottom_first = list(reversed(GROUPS))
    for index, group in enumerate(bottom_first):
        below = {name for lower in bottom_first[:index] for name in lower}
        above = {name for higher in bottom_first[index + 1 :] for name in higher}
        for floor in group:
            may, never = rows[floor]
            siblings = set(group) - {floor}  # independent: never import each other
            assert _names_in(may) - {floor} == below, f"{floor}: may import"
            assert _names_in(never) - {floor} == above | siblings, f"{floor}: never imports"


def test_architecture_contract_list_is_the_contract():
    text = ARCHITECTURE.read_text()
    assert f"**Layers**: `{' > '.join(LAYERS)}`" in text
    cycles = text[text.index("**No module cycles**") : text.index("(`acyclic_siblings`)")]
    assert set(re.findall(r"`([a-z_]+)`", cycles)) == set(
        _contract("acyclic_siblings")["ancestors"]
    )


def test_jobs_rooms_contract_names_every_room_once():
    """Every module and package directly in jobs/ is a room of the contract (its migrations
    excepted: Django loads them by itself), and no room is named twice or missing."""
    rooms = [name for group in ROOM_GROUPS for name in group]
    assert sorted(rooms) == sorted(set(rooms)), "a room named twice"
    jobs = ROOT / "jobs"
    present = {p.stem for p in jobs.glob("*.py") if p.stem != "__init__"}
    present |= {p.parent.name for p in jobs.glob("*/__init__.py")} - {"migrations"}
    assert set(rooms) == present


def test_architecture_rooms_diagram_is_the_jobs_contract():
    """docs/architecture.md's rooms of jobs: top room first, one arrow between layers, the sibling
    rooms of a layer on one line apart by "|", each line's description after two spaces."""
    block = _code_block_after(ARCHITECTURE.read_text(), "## Inside jobs")
    shown: list[list[str]] = [[]]
    for line in block.splitlines():
        if line.strip() == "↓":
            shown.append([])
        elif line[:1].strip():
            names = re.split(r"\s{2,}", line.strip())[0]
            shown[-1].extend(name.strip() for name in names.split("|"))
    assert shown == ROOM_GROUPS


def test_architecture_contract_list_names_the_rooms_contract():
    text = ARCHITECTURE.read_text()
    assert "**jobs' rooms**" in text and '`containers = ["jobs"]`' in text


def test_readme_map_lists_the_floors_bottom_first():
    block = _code_block_after(README.read_text(), "## Map")
    named = []  # the folders an entry starts with ("templates/ static/   pages ...")
    for line in block.splitlines():
        if line[:1].strip():
            words = line.split()
            while words and words[0].endswith("/"):
                named.append(words.pop(0).rstrip("/"))
    assert _bottom_first([name for name in named if name in FLOORS])
    for name in named:
        assert (ROOT / name).is_dir(), f"the README's map names {name}/, which does not exist"


@pytest.mark.parametrize("doc", [ARCHITECTURE, README], ids=lambda p: p.name)
def test_paths_a_document_names_exist(doc):
    """Every `path/like/this` in backticks under a top-level folder of the repository exists."""
    # var/ holds what the portal makes at run time (var/admin-password.txt): not in a checkout.
    tops = {p.name for p in ROOT.iterdir() if p.is_dir() and p.name[0] not in "._"} - {"var"}
    missing = [
        path
        for path in sorted(set(re.findall(r"`([\w.-]+/[\w./-]*)`", doc.read_text())))
        if path.split("/")[0] in tops and not (ROOT / path).exists()
    ]
    assert not missing, f"{doc.name} names paths that do not exist: {missing}"


def test_jobs_stays_within_its_hundred_files():
    """Issue 25's target: `jobs/` holds the job domain in at most 100 modules (migrations aside);
    a capability of its own belongs in an app above it (gangs, tapis, interactive, reports...)."""
    modules = [p for p in (ROOT / "jobs").rglob("*.py") if "migrations" not in p.parts]
    assert len(modules) <= 100, f"jobs/ has {len(modules)} modules"
