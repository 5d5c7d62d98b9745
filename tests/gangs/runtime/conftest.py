"""The fixtures of tests/runtime/ for the gangs app's runtime tests (pytest finds fixtures by the
folder a test is in)."""

from tests.gangs import fixtures_of
from tests.runtime import conftest

globals().update(fixtures_of(conftest))
