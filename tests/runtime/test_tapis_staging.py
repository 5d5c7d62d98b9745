"""Jobs from Tapis apps on the scripted engine: inputs staged into /job/inputs between create
and start (from project storage or an allowed URL), the stages recorded in Tapis' order,
tapisjob.out archived, and staging failures failing the job with Tapis' condition."""

import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

from jobs.execution.container_spec import container_spec
from jobs.execution.outputs import job_archive_outputs_dir
from jobs.execution.runs import job_finish_run, job_launch_run
from jobs.scheduler_bridge.tick import tick
from jobs.transitions import job_tapis_status
from tapis.services import app_create
from tapis.shapes import condition
from tapis.submit import tapis_job_submit
from tests.support.runtime import TEST_IMAGE
from tests.support.scripted_engine import Behaviour

pytestmark = pytest.mark.django_db

APP = {
    "id": "echo",
    "version": "1",
    "containerImage": TEST_IMAGE,
    "command": "sh -c 'echo run=$RUN_ID out=$OUT; sleep 300'",
    "jobAttributes": {
        "parameterSet": {
            "appArgs": [{"name": "size", "inputMode": "REQUIRED", "arg": "--size 1"}],
            "envVariables": [
                {"key": "RUN_ID", "value": "${JobUUID}"},
                {"key": "OUT", "value": "${JobOutputDir}"},
            ],
        },
        "fileInputs": [
            {"name": "data", "inputMode": "REQUIRED", "targetPath": "in/data.txt"},
            {"name": "more", "inputMode": "OPTIONAL", "targetPath": "more.txt"},
        ],
        "resources": {"gpus": 0, "cpus": 1, "cpuMemoryGb": 1},
    },
}
# The app's command with its argument appended, as the container runs it.
COMMANDS = {
    f"{APP['command']} --size 1": Behaviour(output=["run=$RUN_ID out=$OUT"], runs_for=300),
}


@pytest.fixture(autouse=True)
def _commands(scripted_engines):
    scripted_engines.script(COMMANDS)


@pytest.fixture
def app(people, slave):
    user, _ = people
    return app_create(user=user, definition=APP)


@pytest.fixture
def project_file(runtime):
    folder = Path(runtime.PORTAL_STORAGE_BASE) / "project" / "fast" / "data"
    folder.mkdir(parents=True)
    (folder / "data.txt").write_bytes(b"forty-two\n")
    return folder


def _request(*inputs):
    return {
        "name": "staged",
        "appId": "echo",
        "appVersion": "1",
        "fileInputs": list(inputs),
    }


def test_inputs_staged_stages_recorded_and_tapisjob_out_archived(
    people, app, engine, project_file, runtime, tmp_path
):
    runtime.PORTAL_JOB_ARCHIVE_DIR = tmp_path / "archive"
    user, _ = people
    job = tapis_job_submit(
        user=user, request=_request({"name": "data", "sourceUrl": "/project/data/data.txt"})
    )
    job.refresh_from_db()
    assert job.status == "RUNNING", job.end_reason
    assert engine.container_files(job.container_id) == {"/job/inputs/in/data.txt": b"forty-two\n"}
    engine.finish(job.container_id, 0)
    job_finish_run(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == "FINISHED"
    stages = list(job.events.exclude(stage="").values_list("stage", flat=True))
    assert stages == [
        "PENDING",
        "PROCESSING_INPUTS",
        "STAGING_INPUTS",
        "STAGING_JOB",
        "SUBMITTING_JOB",
        "QUEUED",
        "RUNNING",
        "ARCHIVING",
    ]
    out = (job_archive_outputs_dir(job) / "tapisjob.out").read_bytes()
    assert out == f"run={job.uuid} out=/job/outputs\n".encode()
    assert job_tapis_status(job, job.ended_at) == "FINISHED"


def test_a_missing_project_file_fails_the_job(people, app, engine, runtime):
    user, _ = people
    job = tapis_job_submit(
        user=user, request=_request({"name": "data", "sourceUrl": "/project/data/absent.txt"})
    )
    job.refresh_from_db()
    assert job.status == "FAILED"
    assert "input staging: /project/data/absent.txt" in job.end_reason
    assert condition(job, job_tapis_status(job, job.status_updated)) == (
        "JOB_UNABLE_TO_STAGE_INPUTS"
    )
    assert not engine.find_by_label("gpuportal.job", str(job.uuid))  # nothing left behind


def test_a_link_out_of_the_project_is_refused(people, app, engine, project_file, tmp_path):
    user, _ = people
    secret = tmp_path / "secret.txt"
    secret.write_text("not yours")
    (project_file / "link.txt").symlink_to(secret)
    job = tapis_job_submit(
        user=user, request=_request({"name": "data", "sourceUrl": "/project/data/link.txt"})
    )
    job.refresh_from_db()
    assert job.status == "FAILED" and "leads out of the project's storage" in job.end_reason


class _Files(BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 (the http.server API)
        if self.path == "/moved":
            self.send_response(302)
            self.send_header("Location", "http://127.0.0.1:1/elsewhere")
            self.end_headers()
            return
        body = b"from the web\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def web():
    server = HTTPServer(("127.0.0.1", 0), _Files)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()


def test_an_allowed_url_is_fetched_and_a_redirect_is_not_followed(
    people, app, engine, project_file, runtime, web
):
    runtime.PORTAL_INPUT_ALLOWED_HOSTS = ["127.0.0.1"]
    user, _ = people
    job = tapis_job_submit(
        user=user,
        request=_request(
            {"name": "data", "sourceUrl": "/project/data/data.txt"},
            {"name": "more", "sourceUrl": f"{web}/file.txt"},
        ),
    )
    job.refresh_from_db()
    assert job.status == "RUNNING", job.end_reason
    assert engine.container_files(job.container_id)["/job/inputs/more.txt"] == b"from the web\n"

    moved = tapis_job_submit(
        user=user,
        request=_request(
            {"name": "data", "sourceUrl": "/project/data/data.txt"},
            {"name": "more", "sourceUrl": f"{web}/moved"},
        ),
    )
    moved.refresh_from_db()
    assert moved.status == "FAILED" and "HTTP 302" in moved.end_reason


def test_inputs_over_the_size_limit_fail(people, app, engine, project_file, runtime):
    runtime.PORTAL_INPUT_MAX_BYTES = 4
    user, _ = people
    job = tapis_job_submit(
        user=user, request=_request({"name": "data", "sourceUrl": "/project/data/data.txt"})
    )
    job.refresh_from_db()
    assert job.status == "FAILED" and "larger than the 4 bytes" in job.end_reason


def test_a_launch_that_died_after_create_stages_the_inputs_again(
    people, app, slave, engine, project_file, runtime
):
    user, _ = people
    runtime.PORTAL_TASK_MODE = "record"
    job = tapis_job_submit(
        user=user, request=_request({"name": "data", "sourceUrl": "/project/data/data.txt"})
    )
    tick()
    job.refresh_from_db()
    assert job.status == "ASSIGNED"
    runtime.PORTAL_TASK_MODE = "inline"
    created = engine.create(container_spec(job, slave, []))  # died before the inputs were in
    job_launch_run(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == "RUNNING" and job.container_id == created
    assert engine.container_files(created) == {"/job/inputs/in/data.txt": b"forty-two\n"}
