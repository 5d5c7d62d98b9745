"""Shared fixtures: users, projects, a cluster with an online slave with declared GPUs.

Background tasks are only recorded (PORTAL_TASK_MODE=record) unless a test opts in.
"""

import pytest
from django.utils import timezone

from core import tasks


def _remove_stale_wal(session, *, only_orphans: bool) -> None:
    from pathlib import Path

    from django.conf import settings

    if session.config.getoption("reuse_db", default=False):
        return
    database = settings.DATABASES["default"]
    if database["ENGINE"] != "django.db.backends.sqlite3":
        return
    name = Path(database.get("TEST", {}).get("NAME") or "")
    if not name.name or (only_orphans and name.exists()):
        return
    for suffix in ("-wal", "-shm"):
        Path(f"{name}{suffix}").unlink(missing_ok=True)


def pytest_sessionstart(session):
    """Remove a stale WAL beside the SQLite test database before Django recreates it.

    The database runs in WAL mode; a run killed half-way (or a connection still open when the
    test database was destroyed) leaves ``-wal``/``-shm`` files, and Django deletes only the
    database file before making a new one, which would then be read through the old WAL.
    """
    _remove_stale_wal(session, only_orphans=False)


def pytest_sessionfinish(session):
    _remove_stale_wal(session, only_orphans=True)


@pytest.fixture(autouse=True)
def _record_tasks(settings, tmp_path):
    settings.PORTAL_TASK_MODE = "record"
    # Creating users with the real hasher costs ~0.3 s each; tests don't need it.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.PORTAL_STORAGE_BASE = tmp_path / "storage"
    settings.PORTAL_LOG_ARCHIVE_DIR = tmp_path / "logs"
    settings.PORTAL_JOB_ARCHIVE_DIR = tmp_path / "archive"
    settings.PORTAL_CA_DIR = tmp_path / "ca"
    # Plain static names, whatever a `make run` left collected in var/: the test servers serve
    # static files from the app directories, where hashed names do not exist.
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }
    tasks.recorded.clear()
    yield
    tasks.recorded.clear()


@pytest.fixture
def recorded_tasks():
    return tasks.recorded


@pytest.fixture
def scripted_world():
    """The scripted engines' state (tests/support/scripted_engine.py), fresh for the test: the
    test states its command table with ``.script({...})``. A container that was asked to run a
    command the table lacks fails the test here, even where the product caught the error."""
    from tests.support.scripted_engine import WORLD

    WORLD.reset()
    yield WORLD
    unscripted = list(WORLD.unscripted)
    WORLD.reset()
    assert not unscripted, f"commands run without a stated behaviour: {unscripted}"


@pytest.fixture
def scripted_engines(scripted_world, settings):
    """Every slave runs on a scripted engine (settings.PORTAL_ENGINE_CLASS), whatever its URL."""
    settings.PORTAL_ENGINE_CLASS = "tests.support.scripted_engine.ScriptedEngine"
    return scripted_world


@pytest.fixture
def make_user(db, django_user_model):
    def make(username, *, admin=False, **extra):
        return django_user_model.objects.create_user(
            username=username,
            email=f"{username}@example.org",
            password="pw-" + username,
            is_staff=admin,
            is_superuser=admin,
            **extra,
        )

    return make


@pytest.fixture
def project(db):
    from accounts.models import Project

    return Project.objects.create(name="vision", gid=6001)


@pytest.fixture
def other_project(db):
    from accounts.models import Project

    return Project.objects.create(name="speech", gid=6002)


@pytest.fixture
def member(make_user, project):
    from accounts.models import Membership

    user = make_user("alice")
    Membership.objects.create(user=user, project=project)
    return user


@pytest.fixture
def outsider(make_user, other_project):
    from accounts.models import Membership

    user = make_user("bob")
    Membership.objects.create(user=user, project=other_project)
    return user


@pytest.fixture
def admin_user(make_user):
    return make_user("root", admin=True)


@pytest.fixture
def cluster(db):
    from clusters.models import Cluster

    return Cluster.objects.create(id=1, comment="test cluster")


@pytest.fixture
def slave(cluster):
    """An online slave with 4 declared GPUs, 16 CPUs and 64 GB memory (no Docker behind it)."""
    return _declared_slave(cluster, "gpu1", "unix:///nonexistent.sock")


@pytest.fixture
def second_slave(slave):
    """Another slave like ``slave`` in its cluster ("gpu2"): a gang of two 4-GPU tasks, which
    one slave could never hold at once (refused at submit), fits the two."""
    return _declared_slave(slave.cluster, "gpu2", "unix:///nonexistent-gpu2.sock")


def _declared_slave(cluster, name: str, docker_url: str):
    from clusters.models import Gpu, Slave

    slave = Slave.objects.create(
        name=name,
        cluster=cluster,
        docker_url=docker_url,
        host=f"{name}.example.org",
        cpus_total=16,
        memory_total_mb=64 * 1024,
        cuda_version="12.2",
        online=True,
        offline_reason="",
        last_seen=timezone.now(),
    )
    for index in range(4):
        Gpu.objects.create(
            slave=slave, index=index, model="Tesla V100-PCIE-32GB", memory_mb=32768, declared=True
        )
    return slave


HELLO_WORLD = {
    "name": "HelloWorld",
    "description": "Hello world!",
    "request": {
        "resources": {"clusterId": 1, "gpus": 1, "cpus": 2, "cpuMemoryGb": 1},
        "docker": {
            "image": "debian:stable",
            "command": "echo 'Hello World!'",
            "environment": {},
            "storage": [],
            "portMappings": [],
        },
        "scheduling": {"interactive": False},
    },
}


@pytest.fixture
def hello_world():
    import copy

    return copy.deepcopy(HELLO_WORLD)


@pytest.fixture
def submit(member, project, slave):
    """Submit a job document as ``member`` in ``project`` (the slave makes it satisfiable)."""
    from jobs.user_actions.services import job_submit

    def do(document=None, *, user=None, hold=False, **kwargs):
        import copy

        return job_submit(
            user=user or member,
            project=kwargs.pop("project", project),
            document=copy.deepcopy(document or HELLO_WORLD),
            hold=hold,
            **kwargs,
        )

    return do


@pytest.fixture(scope="session")
def session_images():
    """The interactive sessions' images (gpuportal/jupyterlab, gpuportal/tensorboard) on every
    engine. In CI (.ci/run: PORTAL_SESSION_IMAGES_WAIT=1) the build runs in the background from
    the start: wait for its done file, fail at once on its .failed file. Elsewhere build them
    now (scripts/build-session-images.sh: seconds when present, about 1.5 minutes when not);
    without root or mmdebstrap that is a missing Docker set-up (skip, or fail in CI)."""
    import os
    import shutil
    import subprocess
    import time
    from pathlib import Path

    from tests.support.services import require

    repo = Path(__file__).resolve().parent.parent
    done = repo / "var" / "session-images.done"
    failed = repo / "var" / "session-images.failed"
    if os.environ.get("PORTAL_SESSION_IMAGES_WAIT") == "1":
        deadline = time.monotonic() + 15 * 60
        while not done.exists():
            if failed.exists():
                pytest.fail("the session images failed to build: test-artifacts/session-images.log")
            if time.monotonic() > deadline:
                pytest.fail("the session images were not built within 15 minutes")
            time.sleep(2)
        return
    can_build = os.geteuid() == 0 and shutil.which("mmdebstrap") and shutil.which("docker")
    require("docker", bool(can_build), "building the session images needs root and mmdebstrap")
    run = subprocess.run(
        [str(repo / "scripts" / "build-session-images.sh")],
        capture_output=True,
        text=True,
        timeout=20 * 60,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]


@pytest.fixture
def seeded_templates(db):
    """The session templates exactly as interactive's data migration seeds them: a
    transactional test before this one (the browser tests' live server) may have flushed them."""
    import importlib

    from django.apps import apps

    from interactive.models import SessionTemplate

    importlib.import_module("interactive.migrations.0002_seed_templates").seed(apps, None)
    return {t.slug: t for t in SessionTemplate.objects.all()}
