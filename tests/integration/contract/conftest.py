"""The contract suite: the same tests on the scripted engine and on real Docker engines.

``engine`` (engine level) and ``engine_url`` (job level) are parametrised: ``scripted`` always
runs (fast, no Docker: tests/support/scripted_engine.py); ``docker`` (the main engine) and
``docker-extra`` (slave2) carry the ``docker`` mark and skip without Docker, or fail under
PORTAL_REQUIRE_DOCKER=1, like every Docker test. Each test states what its commands do in
``scripted_world`` (the scripted engine plays that table; Docker runs the same commands in
busybox for real), so a table that says something busybox does not do fails here.
"""

import uuid

import pytest

from tests.integration.docker_support import docker_url, require_docker
from tests.support.scripted_engine import ScriptedEngine

ENGINES = [
    "scripted",
    pytest.param("docker", marks=pytest.mark.docker),
    pytest.param("docker-extra", marks=pytest.mark.docker),
]


@pytest.fixture(params=ENGINES)
def engine(request, scripted_world):
    """An engine of each kind (overrides the Docker-only ``engine`` of tests/integration)."""
    if request.param == "scripted":
        return ScriptedEngine(f"fake://contract-{uuid.uuid4().hex[:8]}")
    if request.param == "docker":
        return request.getfixturevalue("docker_engine")
    return request.getfixturevalue("extra_engine")


@pytest.fixture(params=ENGINES[:2])
def engine_url(request, scripted_world):
    """The URL of a slave's engine for job-level tests: scripted, or the main Docker one."""
    if request.param == "scripted":
        request.getfixturevalue("scripted_engines")
        return f"fake://contract-{uuid.uuid4().hex[:8]}"
    url = docker_url()
    require_docker(url)
    return url
