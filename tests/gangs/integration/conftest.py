"""The fixtures of tests/integration/ for the gangs app's integration tests (pytest finds fixtures by the
folder a test is in)."""

from tests.gangs import fixtures_of
from tests.integration import conftest

globals().update(fixtures_of(conftest))
