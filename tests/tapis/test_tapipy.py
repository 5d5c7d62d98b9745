"""Tapis' own Python client, tapipy, driven against the portal: the seed's calls (submitJob
with appArgs, getJobStatus, getJobList, getJobHistory, getJob, getJobOutputDownload of
tapisjob.out, getJobOutputList, resubmitJob, cancelJob) with
a token the portal issues (``manage.py tapis_token``), over a live server.

tapipy pins old versions of libraries the portal also uses, so it lives in a throwaway virtual
environment of its own (built once, reused), like gpulab-cli (tests/cli/). Without a network
to install it the test skips, and fails under PORTAL_REQUIRE_CLI=1 (CI).
"""

import json
import subprocess
import uuid
from pathlib import Path

import pytest

from accounts.models import Membership, Project
from accounts.tokens import api_token_rotate
from tapis.api.auth import tapis_token_wrap
from tapis.services import app_create
from tests.support.clients import tapipy_python
from tests.support.runtime import TEST_IMAGE, add_slave
from tests.support.scripted_engine import Behaviour

SCRIPT = r"""
import json, sys
from tapipy.tapis import Tapis

base_url, token = sys.argv[1], sys.argv[2]
# tenant_id: tapipy would otherwise ask a Tapis Tenants service which tenant base_url is.
client = Tapis(base_url=base_url, access_token=token, tenant_id="portal")
pa = {"parameterSet": {"appArgs": [
    {"arg": "--image_file", "meta": {"name": "arg1", "required": True}},
    {"arg": "'https://example.org/dog.jpg'", "meta": {"name": "arg2", "required": True}},
]}}
job = client.jobs.submitJob(name="img-classifier-job-vm", description="image classifier",
                            appId="img-classify", execSystemId="1", appVersion="0.0.1",
                            fileInputs=[{"name": "labels", "sourceUrl": "/project/images/dog.txt"}],
                            **pa)
out = {"uuid": job.uuid, "submitted": job.status}
out["status"] = client.jobs.getJobStatus(jobUuid=job.uuid).status
out["list"] = [j.uuid for j in client.jobs.getJobList()]
out["history"] = [h.eventDetail for h in client.jobs.getJobHistory(jobUuid=job.uuid)]
got = client.jobs.getJob(jobUuid=job.uuid)
out["job"] = {"appId": got.appId, "condition": got.condition, "parameterSet": got.parameterSet}
out["tapisjob.out"] = client.jobs.getJobOutputDownload(
    jobUuid=job.uuid, outputPath="tapisjob.out"
).decode()
listed = client.jobs.getJobOutputList(jobUuid=job.uuid, outputPath="/")
out["outputs"] = sorted(f.name for f in listed)
again = client.jobs.resubmitJob(jobUuid=job.uuid)
out["resubmitted"] = again.uuid
try:
    client.jobs.cancelJob(jobUuid=job.uuid)
except Exception as exc:  # a finished job cannot be cancelled: Tapis answers 409 too
    out["cancel_error"] = type(exc).__name__
print(json.dumps(out))
"""


# The seed's job: the app's command with the seed's two arguments appended.
SEED_COMMAND = "echo classify --image_file 'https://example.org/dog.jpg'"


@pytest.fixture
def world(transactional_db, settings, django_user_model, scripted_engines):
    """A user in project demo, an app, an input file, and a slave on the scripted engine
    that runs jobs at once (tasks inline, in the live server's thread)."""
    scripted_engines.script(
        {SEED_COMMAND: Behaviour(output=["classify --image_file https://example.org/dog.jpg"])}
    )
    settings.PORTAL_TASK_MODE = "inline"
    settings.PORTAL_INSTANCE = f"test-{uuid.uuid4().hex[:12]}"
    user = django_user_model.objects.create_user("alice", "alice@example.org", "pw")
    project = Project.objects.create(name="demo", gid=4100)
    Membership.objects.create(user=user, project=project)
    add_slave("scripted", f"fake://tapipy-{uuid.uuid4().hex[:8]}")
    folder = Path(settings.PORTAL_STORAGE_BASE) / "project" / "demo" / "images"
    folder.mkdir(parents=True)
    (folder / "dog.txt").write_text("Labrador retriever\n")
    app_create(
        user=user,
        definition={
            "id": "img-classify",
            "version": "0.0.1",
            "containerImage": TEST_IMAGE,
            "command": "echo classify",
            "jobAttributes": {
                "fileInputs": [{"name": "labels", "inputMode": "REQUIRED"}],
                "resources": {"gpus": 0, "cpus": 1, "cpuMemoryGb": 1},
            },
        },
    )
    _, key = api_token_rotate(user=user)
    return tapis_token_wrap(key=key, username=user.username)


def test_tapipy_runs_the_seed_walkthrough(world, live_server):
    python = tapipy_python()
    done = subprocess.run(
        [str(python), "-c", SCRIPT, f"{live_server.url}/api/tapis", world],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["submitted"] in ("PENDING", "FINISHED")
    assert out["status"] == "FINISHED"
    assert out["list"][0] == out["uuid"]
    assert out["history"][-1] == "FINISHED" and "STAGING_INPUTS" in out["history"]
    assert out["job"]["appId"] == "img-classify"
    assert out["job"]["condition"] == "NORMAL_COMPLETION"
    assert "--image_file" in out["job"]["parameterSet"]
    # The app's command with the seed's arguments appended, as the job printed them.
    assert out["tapisjob.out"] == "classify --image_file https://example.org/dog.jpg\n"
    assert out["outputs"] == ["tapisjob.out"]
    assert out["resubmitted"] != out["uuid"]
    assert out["cancel_error"]
