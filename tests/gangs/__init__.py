"""Tests of the gangs app (multi-task OpenPAI jobs), by interface like the rest of tests/: each
folder's conftest takes the fixtures of its namesake under tests/ (api, web, runtime, ...)."""

from pathlib import Path

# The seed's complete OpenPAI example, kept with the other seed examples
# (tests/jobs/spec/fixtures/README.md).
OPENPAI_SEED = (
    Path(__file__).parents[1] / "jobs" / "spec" / "fixtures" / "openpai-distributed-example.jsonc"
)


def fixtures_of(conftest) -> dict:
    """The fixtures a conftest module defines (its autouse ones too), for a gangs folder's
    conftest to take over those of its namesake under tests/ as they are, whatever they are
    named today."""
    from _pytest.fixtures import FixtureFunctionDefinition

    return {k: v for k, v in vars(conftest).items() if isinstance(v, FixtureFunctionDefinition)}
