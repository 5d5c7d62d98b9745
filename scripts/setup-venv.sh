#!/usr/bin/env bash
# Create .venv (once) and install the portal with its test dependencies, each at the version
# pinned in constraints.txt (refreshed by scripts/lock-deps.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
stamp=.venv/.installed-$(cat pyproject.toml constraints.txt | sha1sum | cut -c1-12)
if [ ! -f "$stamp" ]; then
  .venv/bin/pip install -q --upgrade pip
  .venv/bin/pip install -q -c constraints.txt -e '.[test]'
  rm -f .venv/.installed-*
  touch "$stamp"
fi
