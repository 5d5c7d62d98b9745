"""The fixtures of tests/api/ for the gangs app's api tests (pytest finds fixtures by the
folder a test is in)."""

from tests.api import conftest
from tests.gangs import fixtures_of

globals().update(fixtures_of(conftest))
