"""Print the app-level import table: for each pair of apps, how many module pairs import across.

Usage: python scripts/app_imports.py [ROOT]   (ROOT: a checkout; default: this one)

Counts module-level and in-function imports alike (grimp sees both). Used for the before/after
table in docs/architecture.md. The apps and their order are the layers of the import contract
(``[tool.importlinter]`` in pyproject.toml), bottom floor first.
"""

import sys
import tomllib
from pathlib import Path

import grimp

HERE = Path(__file__).resolve().parent.parent


def contract_layers(root: Path = HERE) -> list[str]:
    """The app packages of the layers contract, bottom floor (``core``) first; the sibling apps
    of one floor (``"tapis | ssh"``) in the order the contract writes them."""
    config = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["importlinter"]
    (layers,) = [c["layers"] for c in config["contracts"] if c["type"] == "layers"]
    return [name.strip() for layer in reversed(layers) for name in layer.split("|")]


def main() -> None:
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE
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
