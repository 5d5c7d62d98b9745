"""Print the app-level import table: for each pair of apps, how many module pairs import across.

Usage: python scripts/app_imports.py [ROOT]   (ROOT: a checkout; default: this one)
       python scripts/app_imports.py --rooms jobs [ROOT]   (the rooms of one app, from its own
       layers contract: jobs' rooms contract, ``containers = ["jobs"]``)

Counts module-level and in-function imports alike (grimp sees both). Used for the before/after
table in docs/architecture.md. The apps and their order are the layers of the import contract
(``[tool.importlinter]`` in pyproject.toml), bottom floor first.
"""

import sys
import tomllib
from pathlib import Path

import grimp

HERE = Path(__file__).resolve().parent.parent


def contract_layers(root: Path = HERE, container: str | None = None) -> list[str]:
    """The packages of a layers contract, bottom first: the apps' (no ``containers``; ``core``
    first), or the rooms of ``container`` (its own contract). The siblings of one layer
    (``"tapis | ssh"``) in the order the contract writes them."""
    config = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["importlinter"]
    wanted = [container] if container else None
    (layers,) = [
        c["layers"]
        for c in config["contracts"]
        if c["type"] == "layers" and c.get("containers") == wanted
    ]
    return [name.strip() for layer in reversed(layers) for name in layer.split("|")]


def import_counts(graph, units: list[str], unit_of) -> dict[tuple[str, str], int]:
    """Module pairs importing across units: {(importer's unit, imported's unit): count}."""
    counts: dict[tuple[str, str], int] = {}
    for module in graph.modules:
        source = unit_of(module)
        for imported in graph.find_modules_directly_imported_by(module):
            target = unit_of(imported)
            if source in units and target in units and target != source:
                counts[source, target] = counts.get((source, target), 0) + 1
    return counts


def print_table(units: list[str], counts: dict[tuple[str, str], int], what: str) -> None:
    """Rows named and numbered; columns by the rows' numbers (the names would not fit)."""
    width = max(len(u) for u in units) + 4
    print(
        "importer \\ imported".ljust(width) + "".join(f"{n:>4}" for n in range(1, len(units) + 1))
    )
    for number, source in enumerate(units, 1):
        cells = [
            "-" if source == target else str(counts.get((source, target), 0)) for target in units
        ]
        print(f"{number:>2} {source}".ljust(width) + "".join(f"{c:>4}" for c in cells))
    loops = [(a, b) for (a, b) in counts if (b, a) in counts and a < b]
    print(
        f"{what} pairs importing each other:", ", ".join(f"{a}<->{b}" for a, b in loops) or "none"
    )


def rooms_main(container: str, root: Path) -> None:
    """The room import table of ``container``: rows and columns in its contract's order, top
    room first (a cell above the diagonal counts imports of a lower room by a higher one)."""
    rooms = list(reversed(contract_layers(HERE, container)))
    graph = grimp.build_graph(container, cache_dir=None)

    def room_of(module: str) -> str:
        parts = module.split(".")
        return parts[1] if len(parts) > 1 and parts[0] == container else ""

    print_table(rooms, import_counts(graph, rooms, room_of), "room")


def main() -> None:
    args = sys.argv[1:]
    if args[:1] == ["--rooms"]:
        root = Path(args[2]) if len(args) > 2 else HERE
        sys.path.insert(0, str(root))
        rooms_main(args[1], root)
        return
    root = Path(args[0]) if args else HERE
    sys.path.insert(0, str(root))
    # This checkout's floors; a package an older checkout lacks is left out.
    apps = [app for app in contract_layers() if (root / app / "__init__.py").exists()]
    graph = grimp.build_graph(*apps, cache_dir=None)
    counts: dict[tuple[str, str], int] = {}
    for module in graph.modules:
        source = module.split(".")[0]
        for imported in graph.find_modules_directly_imported_by(module):
            target = imported.split(".")[0]
            if target != source and target in apps:
                counts[source, target] = counts.get((source, target), 0) + 1
    width = max(len(a) for a in apps)
    print("importer \\ imported".ljust(width + 14) + "".join(a.rjust(14) for a in apps))
    for source in apps:
        cells = [
            "-" if source == target else str(counts.get((source, target), 0)) for target in apps
        ]
        print(source.ljust(width + 14) + "".join(c.rjust(14) for c in cells))
    cycles = [(a, b) for (a, b) in counts if (b, a) in counts and a < b]
    print("app pairs importing each other:", ", ".join(f"{a}<->{b}" for a, b in cycles) or "none")


if __name__ == "__main__":
    main()
