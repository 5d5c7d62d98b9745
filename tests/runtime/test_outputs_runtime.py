"""Outputs on the scripted engine: the folders and their variables in every container, the
container writes, the finish copies its output folder before removing it, list and zip."""

import io
import zipfile

import pytest

from jobs.execution.container_spec import WORKDIR_ENV
from jobs.execution.outputs import job_archive_outputs_dir, job_output_response, job_outputs_list
from jobs.execution.runs import job_finish_run
from jobs.models import JobEvent
from tests.support.runtime import SHARED_COMMANDS, containers_of, job_doc, submit
from tests.support.scripted_engine import Behaviour

pytestmark = pytest.mark.django_db


WRITER = (
    "sh -c 'mkdir -p $JOB_OUTPUT_DIR/sub; echo one > $JOB_OUTPUT_DIR/one.txt; "
    "echo two >> $JOB_OUTPUT_DIR/one.txt; echo deep > $JOB_OUTPUT_DIR/sub/deep.txt; "
    "echo in=$JOB_INPUT_DIR work=$JOB_WORKING_DIR'"
)
COMMANDS = {
    **SHARED_COMMANDS,
    WRITER: Behaviour(
        output=["in=$JOB_INPUT_DIR work=$JOB_WORKING_DIR"],
        files={"$JOB_OUTPUT_DIR/one.txt": "one\ntwo\n", "$JOB_OUTPUT_DIR/sub/deep.txt": "deep\n"},
    ),
}


@pytest.fixture(autouse=True)
def _commands(scripted_engines):
    scripted_engines.script(COMMANDS)


def test_a_job_writes_outputs_that_are_archived_listed_and_downloaded(people, slave):
    user, _ = people
    job = submit(people, job_doc(WRITER))
    job.refresh_from_db()
    assert job.status == "FINISHED"
    assert containers_of(slave, job) == []  # removed, after the copy
    files = job_outputs_list(job=job, user=user, recursive=True)
    assert {e["path"]: e["size"] for e in files if e["type"] == "file"} == {
        "one.txt": 8,
        "sub/deep.txt": 5,
    }
    response = job_output_response(job=job, user=user, path="", as_zip=True)
    with zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content))) as archive:
        assert archive.read("one.txt") == b"one\ntwo\n"
        assert archive.read("sub/deep.txt") == b"deep\n"
    stages = list(job.events.exclude(stage="").values_list("stage", flat=True))
    assert stages == ["ARCHIVING"]
    assert job.events.filter(message="outputs archived: 3 entries, 13 bytes").exists()


def test_every_container_gets_the_folders_and_their_variables(people, slave, engine):
    job = submit(people, job_doc("sleep 300"))
    job.refresh_from_db()
    (container,) = containers_of(slave, job)
    spec = engine.container_spec(container.id)
    assert {k: spec.environment[k] for k in WORKDIR_ENV} == WORKDIR_ENV
    assert spec.folders == ("/job/inputs", "/job/outputs")
    assert {"/job/outputs", "/job/inputs"} <= engine.container_folders(container.id)


def test_an_engine_failure_while_copying_is_a_warning_not_a_stuck_job(people, slave, engine):
    job = submit(people, job_doc("sleep 300"))
    job.refresh_from_db()
    engine.fail_next("copy from", permanent=True, message="copy from: boom")
    engine.finish(job.container_id, 0)
    job_finish_run(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == "FINISHED"
    warning = job.events.get(type=JobEvent.Type.WARNING)
    assert "outputs not copied" in warning.message and "boom" in warning.message


def test_over_limit_outputs_stop_with_a_warning_event(people, slave, engine, settings):
    settings.PORTAL_OUTPUT_MAX_FILES = 2
    job = submit(people, job_doc("sleep 300"))
    job.refresh_from_db()
    for i in range(5):
        engine.write_file(job.container_id, f"/job/outputs/f{i}.txt", b"x")
    engine.finish(job.container_id, 0)
    job_finish_run(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == "FINISHED"
    assert len(list(job_archive_outputs_dir(job).iterdir())) == 2
    warning = job.events.get(type=JobEvent.Type.WARNING)
    assert "copy stopped at 2 entries" in warning.message
    assert "PORTAL_OUTPUT_MAX_FILES" in warning.message


def test_a_mount_at_or_above_a_folder_replaces_it():
    from jobs.execution.container_spec import workdir_folders
    from jobs.execution.storage import ResolvedMount

    def mount(path):
        return ResolvedMount(host_path="/srv/x", container_path=path, root_host_path="/srv")

    assert workdir_folders([], {}) == ("/job/inputs", "/job/outputs")
    assert workdir_folders([mount("/job/outputs/")], {}) == ("/job/inputs",)
    assert workdir_folders([mount("/job")], {}) == ()
    assert workdir_folders([mount("/jobs")], {"/job/inputs": 1}) == ("/job/outputs",)
