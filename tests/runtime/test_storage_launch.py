"""Storage folders at launch, fast: a scripted engine behind a local (unix://) slave URL, so
the portal prepares the folders on this machine exactly as for a local Docker slave."""

import uuid
from pathlib import Path

import pytest

from tests.support.runtime import SHARED_COMMANDS, add_slave, job_doc, submit

pytestmark = pytest.mark.django_db


@pytest.fixture
def local_slave(people, runtime, scripted_engines):
    scripted_engines.script(SHARED_COMMANDS)
    slave = add_slave("local", f"unix:///run/gpuportal-test/{uuid.uuid4().hex[:8]}.sock")
    assert slave.online, slave.offline_reason
    return slave


def test_project_folder_is_prepared_and_mounted(people, local_slave, runtime):
    from clusters.services import engine_for

    job = submit(people, job_doc("sleep 300", docker__storage=[{"containerPath": "/project"}]))
    job.refresh_from_db()
    assert job.status == "RUNNING", job.end_reason
    folder = Path(runtime.PORTAL_STORAGE_BASE) / "project" / "fast"
    assert folder.is_dir()
    with engine_for(local_slave) as engine:
        assert engine.inspect(job.container_id).running


def test_a_link_in_the_storage_path_fails_the_launch(people, local_slave, runtime, tmp_path):
    folder = Path(runtime.PORTAL_STORAGE_BASE) / "project" / "fast"
    folder.mkdir(parents=True)
    (folder / "escape").symlink_to(tmp_path)
    doc = job_doc("true", docker__storage=[{"hostPath": "/project/escape/", "containerPath": "/x"}])
    job = submit(people, doc)
    job.refresh_from_db()
    assert job.status == "FAILED" and job.end_reason.startswith("storage: ")
    assert "symlink" in job.end_reason
