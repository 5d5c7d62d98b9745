"""Fast runtime tests: launch, finish, stop, halt, restart, reconcile and the watcher on the
scripted engine (tests/support/scripted_engine.py: each module states what its commands do),
with tasks run inline as in production's order."""

import uuid

import pytest
from django.db import DEFAULT_DB_ALIAS, connections, transaction

from accounts.models import Membership, Project
from clusters.services import engine_for
from tests.support.runtime import add_slave


@pytest.fixture(autouse=True)
def _scripted(scripted_engines):
    """Every slave of these tests runs on a scripted engine."""
    return scripted_engines


@pytest.fixture
def commits(request, monkeypatch):
    """Commit semantics inside a test transaction: on_commit callbacks (fired tasks) run when
    the outermost atomic block of the code under test ends, or at once outside any, as they
    would against a real database, without flushing every table after each test (which costs
    ~0.7 s a test on SQLite). Tests with threads use a transactional database instead."""
    if (
        "transactional_db" in request.fixturenames
        or request.node.get_closest_marker("django_db")
        and request.node.get_closest_marker("django_db").kwargs.get("transaction")
    ):
        yield
        return
    request.getfixturevalue("db")
    connection = connections[DEFAULT_DB_ALIAS]
    base = len(connection.atomic_blocks)

    def drain():
        while len(connection.atomic_blocks) <= base and connection.run_on_commit:
            _, callback, _ = connection.run_on_commit.pop(0)
            callback()

    original_exit = transaction.Atomic.__exit__
    original_on_commit = transaction.on_commit

    def exit_then_commit(self, exc_type, exc_value, traceback):
        result = original_exit(self, exc_type, exc_value, traceback)
        if exc_type is None:
            drain()
        return result

    def on_commit(func, using=None, robust=False):
        original_on_commit(func, using=using, robust=robust)
        drain()

    monkeypatch.setattr(transaction.Atomic, "__exit__", exit_then_commit)
    monkeypatch.setattr(transaction, "on_commit", on_commit)
    yield


@pytest.fixture
def runtime(settings, commits):
    settings.PORTAL_TASK_MODE = "inline"
    settings.PORTAL_HALT_GRACE_S = 0.3
    settings.PORTAL_STOP_GRACE_S = 0
    settings.PORTAL_SLAVE_LOST_GRACE_S = 600
    settings.PORTAL_INSTANCE = f"test-{uuid.uuid4().hex[:12]}"
    return settings


@pytest.fixture
def people(runtime, django_user_model):
    user = django_user_model.objects.create_user("carol", "carol@example.org", "pw")
    project = Project.objects.create(name="fast", gid=4321)
    Membership.objects.create(user=user, project=project)
    return user, project


@pytest.fixture
def slave(people):
    """Slave "mem" on its own scripted engine, probed online."""
    slave = add_slave("mem", f"fake://mem-{uuid.uuid4().hex[:8]}")
    assert slave.online, slave.offline_reason
    return slave


@pytest.fixture
def engine(slave):
    """A client of the slave's scripted engine (the same daemon the portal talks to)."""
    with engine_for(slave) as client:
        yield client
