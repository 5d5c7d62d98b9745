#!/usr/bin/env bash
# Refresh constraints.txt: every dependency of the portal and its tests (pyproject.toml, the
# `test` extra), pinned to one version each, as pip-tools resolves them today for this Python.
# scripts/setup-venv.sh and CI install with `-c constraints.txt`, so a new release of anything
# reaches the portal only through a commit of this file. Run after changing pyproject.toml's
# dependencies, or to take updates:  ./scripts/lock-deps.sh  (then run `make test`).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
tools=$(mktemp -d)
trap 'rm -rf "$tools"' EXIT
"$PYTHON" -m venv "$tools"
"$tools/bin/pip" install -q --upgrade pip 'pip-tools>=7.4,<8'
"$tools/bin/pip-compile" --quiet --extra test --strip-extras --no-emit-index-url --no-emit-find-links \
  --output-file constraints.txt pyproject.toml
echo "constraints.txt refreshed: $(grep -c '==' constraints.txt) pinned packages"
