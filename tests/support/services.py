"""Skip-or-fail for tests that need a real service (Docker, PostgreSQL, chromium, gpulab-cli).

Locally, a missing service skips the test with the reason; in CI the matching
``PORTAL_REQUIRE_<NAME>=1`` turns that skip into a failure, so nothing silently doesn't run.
"""

import os

import pytest


def require(name: str, available: bool, reason: str) -> None:
    if available:
        return
    if os.environ.get(f"PORTAL_REQUIRE_{name.upper()}") == "1":
        pytest.fail(f"{name} is required here (PORTAL_REQUIRE_{name.upper()}=1): {reason}")
    pytest.skip(reason)
