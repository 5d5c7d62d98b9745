"""Sessions on the scripted engine: the runtime tests' fixtures (tasks inline, commit
semantics, a user in a project) and a slave whose engine tells a container's bridge address."""

import uuid
from datetime import timedelta

import pytest

from tests.runtime.conftest import commits, people, runtime  # noqa: F401
from tests.support.runtime import TEST_IMAGE, add_slave
from tests.support.scripted_engine import ScriptedEngine


@pytest.fixture
def session_slave(people, scripted_engines, monkeypatch):  # noqa: F811
    """Slave "mem" on a scripted engine, probed online; containers answer at 10.9.8.7."""
    monkeypatch.setattr(
        ScriptedEngine, "container_address", lambda self, cid: "10.9.8.7", raising=False
    )
    slave = add_slave("mem", f"fake://mem-{uuid.uuid4().hex[:8]}")
    assert slave.online, slave.offline_reason
    return slave


@pytest.fixture
def tiny_template(db):
    from interactive.models import SessionTemplate

    return SessionTemplate.objects.create(
        slug="tiny",
        title="Tiny app",
        kind="custom",
        image=TEST_IMAGE,
        command="serve --port {port} --base {base_url}",
        port=7000,
        landing_path="lab",
        gpus=1,
        cpus=1,
        memory_gb=1,
        time_box=timedelta(hours=1),
    )
