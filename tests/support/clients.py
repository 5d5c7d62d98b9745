"""The real clients the tests drive, each in a throwaway virtual environment of its own (built
once, reused): tapipy pins old versions of libraries the portal also uses. Used by the tests and
by the production soak (scripts/soak.py)."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.cli.cli_support import ROOT, unavailable

TAPIPY_VERSION = "25.4.0"
TAPIPY_VENV = Path(os.environ.get("PORTAL_TAPIPY_VENV_DIR", ROOT / "var" / "test-tapipy-venv"))


def tapipy_python() -> Path:
    python = TAPIPY_VENV / "bin" / "python"
    marker = TAPIPY_VENV / ".installed"
    if python.exists() and marker.exists():
        return python
    shutil.rmtree(TAPIPY_VENV, ignore_errors=True)
    TAPIPY_VENV.parent.mkdir(parents=True, exist_ok=True)
    try:
        subprocess.run([sys.executable, "-m", "venv", str(TAPIPY_VENV)], check=True, timeout=300)
        pip = subprocess.run(
            [str(python), "-m", "pip", "install", "-q", f"tapipy=={TAPIPY_VERSION}"],
            capture_output=True,
            text=True,
            timeout=900,
        )
    except (subprocess.SubprocessError, OSError) as error:
        unavailable(f"cannot create a virtual environment for tapipy: {error}")
    if pip.returncode != 0:
        tail = (pip.stderr or pip.stdout).strip().splitlines()[-3:]
        unavailable(f"cannot install tapipy=={TAPIPY_VERSION} (no network?): {' | '.join(tail)}")
    marker.write_text(f"tapipy=={TAPIPY_VERSION}\n")
    return python
