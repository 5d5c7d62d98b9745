"""Fixtures for tests that drive real Docker engines (see docker_support for the variables)."""

import uuid

import pytest

from clusters.runtime.engine import DockerEngine
from clusters.runtime.spec import ContainerSpec
from tests.integration.docker_support import (
    TEST_IMAGE,
    docker_url,
    require_docker,
    require_extra_engine,
)


@pytest.fixture(scope="session")
def docker_engine():
    """The main engine (PORTAL_TEST_DOCKER_URL)."""
    require_docker(docker_url())
    engine = DockerEngine(docker_url())
    yield engine
    engine.close()


@pytest.fixture(scope="session")
def extra_engine():
    """The first extra engine (slave2 by default)."""
    engine = DockerEngine(require_extra_engine(0))
    yield engine
    engine.close()


@pytest.fixture(params=["main", "extra"])
def engine(request):
    """Each engine test runs on the main engine and again on the first extra engine."""
    name = "docker_engine" if request.param == "main" else "extra_engine"
    return request.getfixturevalue(name)


@pytest.fixture
def test_labels():
    """A label unique to the test: lets it find its own containers and events, and clean up."""
    return {"gpuportal.test": uuid.uuid4().hex}


@pytest.fixture
def run_container(engine, test_labels):
    """run_container(**ContainerSpec fields) -> id; image defaults to the test image. Every
    container the test created (or that carries its label) is removed afterwards."""
    created = []

    def run(**fields):
        fields.setdefault("image", TEST_IMAGE)
        fields["labels"] = {**fields.get("labels", {}), **test_labels}
        container_id = engine.run(ContainerSpec(**fields))
        created.append(container_id)
        return container_id

    yield run
    leftovers = {state.id for state in engine.list_by_labels(test_labels)}
    for container_id in set(created) | leftovers:
        engine.remove(container_id)
