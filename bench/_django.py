"""Django for the benchmark scripts (``python bench/<name>.py``).

bench/ is not an installed package (pyproject.toml installs the apps only) and no installed app
knows it, so the benchmarks are scripts, not management commands. Each one imports this module
first when it runs as ``__main__``: the repository root goes first on the path (in place of
bench/ itself, so ``bench.<name>`` and the apps import as in the tree), the settings are the
portal's (``portal.settings`` unless ``DJANGO_SETTINGS_MODULE`` says otherwise) and Django is set
up; ``run(Command)`` then runs the script's command class with Django's argument handling
(``--help``, a ``CommandError`` printed with exit status 1).
"""

import os
import sys
from pathlib import Path

import django

ROOT = Path(__file__).resolve().parent.parent

if sys.path and Path(sys.path[0] or ".").resolve() == ROOT / "bench":
    sys.path[0] = str(ROOT)
elif str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
django.setup()


def run(command_class) -> None:
    """Run ``command_class`` (a Django ``BaseCommand``) on this process's arguments."""
    command_class().run_from_argv(["python", os.path.relpath(sys.argv[0]), *sys.argv[1:]])
