"""The real clients the tests drive besides gpulab-cli (tests/cli/cli_support.install_cli), each
in a throwaway virtual environment of its own: tapipy pins old versions of libraries the portal
also uses. Used by the tests and by the production soak (scripts/soak.py)."""

import os
from pathlib import Path

from tests.cli.cli_support import ROOT, client_venv

TAPIPY_VERSION = "25.4.0"
TAPIPY_VENV = Path(os.environ.get("PORTAL_TAPIPY_VENV_DIR", ROOT / "var" / "test-tapipy-venv"))


def tapipy_python() -> Path:
    return client_venv(TAPIPY_VENV, f"tapipy=={TAPIPY_VERSION}") / "bin" / "python"
