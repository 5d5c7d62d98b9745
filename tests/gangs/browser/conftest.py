"""The fixtures of tests/browser/ for the gangs app's browser tests (pytest finds fixtures by the
folder a test is in)."""

from tests.browser import conftest
from tests.gangs import fixtures_of

globals().update(fixtures_of(conftest))
