"""Which Docker engines the integration tests use, and skipping (or failing) without them.

Environment:
- PORTAL_TEST_DOCKER_URL: the main engine (default unix:///var/run/docker.sock).
- PORTAL_TEST_EXTRA_DOCKER_URLS: comma-separated extra engines acting as more slaves (default:
  the slave2/slave3 sockets of scripts/docker-engines.sh, those that exist).
- PORTAL_REQUIRE_DOCKER=1: an unreachable engine (or a missing test image) fails the test
  instead of skipping it, so CI cannot pass by skipping.

Start everything with ``scripts/docker-engines.sh start`` (root): the engines and the test image.
"""

from __future__ import annotations

import os
from functools import cache

import pytest

TEST_IMAGE = "gpuportal/busybox:latest"
DEFAULT_DOCKER_URL = "unix:///var/run/docker.sock"
DEFAULT_EXTRA_SOCKETS = ("/var/run/gpuportal/slave2.sock", "/var/run/gpuportal/slave3.sock")
HOW_TO_START = "start the engines with `sudo scripts/docker-engines.sh start`"


def docker_url() -> str:
    return os.environ.get("PORTAL_TEST_DOCKER_URL", "").strip() or DEFAULT_DOCKER_URL


def extra_engine_urls() -> list[str]:
    configured = os.environ.get("PORTAL_TEST_EXTRA_DOCKER_URLS")
    if configured is not None:
        return [url.strip() for url in configured.split(",") if url.strip()]
    return [f"unix://{path}" for path in DEFAULT_EXTRA_SOCKETS if os.path.exists(path)]


def docker_required() -> bool:
    return os.environ.get("PORTAL_REQUIRE_DOCKER", "").strip() == "1"


@cache
def engine_problem(url: str) -> str | None:
    """Why the engine at ``url`` cannot run the tests (unreachable, no test image), or None."""
    from clusters.runtime.engine import DockerEngine
    from clusters.runtime.errors import RuntimeFailure

    engine = DockerEngine(url, timeout=10)
    try:
        engine.info()
        if not engine.image_present(TEST_IMAGE):
            return (
                f"{TEST_IMAGE} is missing on {url}: run "
                f"`DOCKER_HOST={url} scripts/build-test-image.sh`"
            )
    except RuntimeFailure as failure:
        return f"no Docker engine at {url} ({failure}); {HOW_TO_START}"
    finally:
        engine.close()
    return None


def engine_available(url: str) -> bool:
    return engine_problem(url) is None


def require_docker(url: str | None = None) -> None:
    """Skip the calling test when the engine cannot be used; fail instead when
    PORTAL_REQUIRE_DOCKER=1."""
    url = url or docker_url()
    reason = engine_problem(url)
    if reason is None:
        return
    if docker_required():
        pytest.fail(f"PORTAL_REQUIRE_DOCKER=1 but {reason}", pytrace=False)
    pytest.skip(reason)


def require_extra_engine(position: int = 0) -> str:
    """The URL of the extra engine at ``position``, after require_docker on it."""
    urls = extra_engine_urls()
    if len(urls) <= position:
        reason = f"no extra Docker engine #{position + 2} configured; {HOW_TO_START}"
        if docker_required():
            pytest.fail(f"PORTAL_REQUIRE_DOCKER=1 but {reason}", pytrace=False)
        pytest.skip(reason)
    require_docker(urls[position])
    return urls[position]
