"""The contract suite: the same tests on the in-memory engine and on real Docker engines.

``engine`` (engine level) and ``engine_url`` (job level) are parametrised: ``memory`` always
runs (fast, no Docker); ``docker`` (the main engine) and ``docker-extra`` (slave2) carry the
``docker`` mark and skip without Docker, or fail under PORTAL_REQUIRE_DOCKER=1, like every
Docker test. A behaviour one engine has and the other lacks fails here, so the two cannot
drift apart.
"""

import uuid

import pytest

from clusters.runtime import memory
from clusters.runtime.memory import MemoryEngine
from tests.integration.docker_support import docker_url, require_docker

ENGINES = [
    "memory",
    pytest.param("docker", marks=pytest.mark.docker),
    pytest.param("docker-extra", marks=pytest.mark.docker),
]


@pytest.fixture(autouse=True)
def _fresh_memory_engines():
    memory.reset()
    yield
    memory.reset()


@pytest.fixture(params=ENGINES)
def engine(request):
    """An engine of each kind (overrides the Docker-only ``engine`` of tests/integration)."""
    if request.param == "memory":
        client = MemoryEngine(f"memory://contract-{uuid.uuid4().hex[:8]}")
    elif request.param == "docker":
        client = request.getfixturevalue("docker_engine")
    else:
        client = request.getfixturevalue("extra_engine")
    yield client


@pytest.fixture(params=ENGINES[:2])
def engine_url(request):
    """The URL of a slave's engine for job-level tests: in-memory, or the main Docker one."""
    if request.param == "memory":
        return f"memory://contract-{uuid.uuid4().hex[:8]}"
    url = docker_url()
    require_docker(url)
    return url
