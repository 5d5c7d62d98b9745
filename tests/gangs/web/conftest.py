"""The fixtures of tests/web/ for the gangs app's web tests (pytest finds fixtures by the
folder a test is in)."""

from tests.gangs import fixtures_of
from tests.web import conftest

globals().update(fixtures_of(conftest))
