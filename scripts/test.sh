#!/usr/bin/env bash
# Set up and run every check: lint, Django's checks, migrations, and the test suite.
# Tests that need Docker, PostgreSQL, Redis or chromium skip with a reason when those are missing,
# unless PORTAL_REQUIRE_DOCKER / _POSTGRES / _REDIS / _BROWSER is 1 (CI).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup-venv.sh
export PORTAL_VAR_DIR=${PORTAL_VAR_DIR:-$(mktemp -d)}
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/python manage.py check
.venv/bin/python manage.py makemigrations --check --dry-run
# The import contract: floors run one way, no cycles, a pure scheduler (pyproject.toml).
.venv/bin/lint-imports
# Static types (pyproject.toml's [tool.mypy]: every product package; core and the pure
# scheduler strict). Incremental: the cache in .mypy_cache makes a rerun take seconds.
.venv/bin/mypy
# The 30 slowest tests are listed at the end (to keep CI within its time).
# Line coverage of the runtime orchestration (the fast tests in tests/runtime/ on the scripted
# engine cover it without Docker; engine.py, the Docker adapter, only with Docker).
exec .venv/bin/pytest --durations=30 \
  --cov=jobs.execution.runs --cov=jobs.execution.reconcile --cov=jobs.execution.watcher \
  --cov=clusters.runtime.engine --cov-report=term "$@"
