"""Tapis' own Python client, tapipy, driven against the portal over a live server: the seed's
calls (submitJob with appArgs, getJobStatus, getJobList, getJobHistory, getJob,
getJobOutputDownload of tapisjob.out, getJobOutputList, resubmitJob, cancelJob) with the API
token in tapipy's JWT wrapper; and, with a Tapis token from ``manage.py tapis_token``, a user
in two projects submitting through notes, both job searches, hideJob/unhideJob, sendEvent,
getSystems/getSystem and listFiles/getContents (issue 27, Tapis items 6, 8, 9).

tapipy pins old versions of libraries the portal also uses, so it lives in a throwaway virtual
environment of its own (built once, reused), like gpulab-cli (tests/cli/). Without a network
to install it the test skips, and fails under PORTAL_REQUIRE_CLI=1 (CI).
"""

import io
import json
import subprocess
import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.management import call_command
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.models import Membership, Project
from accounts.tokens import api_token_rotate
from jobs.models import Job
from tapis.api.auth import tapis_token_wrap
from tapis.models import TapisToken
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


# Issue 27, Tapis items 6, 8 and 9, with tapipy's own calls: a user in two projects submits
# through fields tapipy passes (notes, coresPerNode, memoryMB, maxMinutes, tags, execSystemId);
# searches both ways; hides, unhides, sends an event; reads Systems and Files; all with a
# Tapis token from manage.py tapis_token, which leaves the API token working.
TOOLS_SCRIPT = r"""
import json, sys, time
from tapipy.tapis import Tapis
from tapipy.errors import BadRequestError

base_url, token, later = sys.argv[1], sys.argv[2], sys.argv[3]
client = Tapis(base_url=base_url, access_token=token, tenant_id="portal")
jobs = client.jobs
common = {"appId": "hello", "appVersion": "1.0", "execSystemId": "1"}
out = {}
try:
    jobs.submitJob(name="nowhere", **common)
except BadRequestError as exc:
    out["no_project"] = str(exc)
a = jobs.submitJob(name="in-demo", coresPerNode=2, memoryMB=2048, maxMinutes=15,
                   tags=["nightly"], notes={"project": "demo"}, **common)
b = jobs.submitJob(name="in-vision", notes={"project": "vision", "resources": {"gpus": 1}},
                   **common)
waiting = jobs.submitJob(name="later", notes={"project": "vision",
                         "scheduling": {"notBefore": later}}, **common)
out["uuids"] = {"a": a.uuid, "b": b.uuid, "waiting": waiting.uuid}
for _ in range(100):
    if {jobs.getJobStatus(jobUuid=u).status for u in (a.uuid, b.uuid)} == {"FINISHED"}:
        break
    time.sleep(0.1)
got_a, got_b = jobs.getJob(jobUuid=a.uuid), jobs.getJob(jobUuid=b.uuid)
out["a"] = {"coresPerNode": got_a.coresPerNode, "memoryMB": got_a.memoryMB,
            "maxMinutes": got_a.maxMinutes, "tags": got_a.tags, "notes": got_a.notes,
            "execSystemId": got_a.execSystemId, "status": got_a.status}
out["b_status"] = got_b.status

found = jobs.getJobSearchList(_tapis_query_parameters={"status.eq": "FINISHED",
                                                       "name.like": "in-*"}, orderBy="name(asc)")
out["search_query"] = [j.name for j in found]
found = jobs.getJobSearchListByPostSqlStr(
    request_body={"search": ["project = 'vision'", "AND status IN ('PENDING', 'BLOCKED')"]})
out["search_sql"] = [j.uuid for j in found]
whole = jobs.getJobSearchListByPostSqlStr(request_body={"search": "name = 'in-demo'"},
                                          select="allAttributes")
out["search_whole"] = [(j.uuid, j.coresPerNode) for j in whole]

out["hide"] = jobs.hideJob(jobUuid=a.uuid).message
out["listed_hidden"] = a.uuid in [j.uuid for j in jobs.getJobList()]
out["unhide"] = jobs.unhideJob(jobUuid=a.uuid).message
out["listed_shown"] = a.uuid in [j.uuid for j in jobs.getJobList()]
jobs.sendEvent(jobUuid=waiting.uuid, eventData="checkpoint 1", eventDetail="PROGRESS")
out["events"] = [(h.eventDetail, h.description) for h in jobs.getJobHistory(jobUuid=waiting.uuid)
                 if h.event == "JOB_USER_EVENT"]
jobs.cancelJob(jobUuid=waiting.uuid)

systems = client.systems.getSystems()
out["systems"] = [(s.id, s.canExec) for s in systems]
out["exec_system"] = client.systems.getSystem(systemId=got_a.execSystemId).id
files = client.files
out["archive_jobs"] = sorted(f.name for f in files.listFiles(systemId="portal-archive",
                                                             path="jobs"))
listed = files.listFiles(systemId="portal-archive", path=f"jobs/{a.uuid}/outputs")
out["outputs"] = [f.path for f in listed]
out["content"] = files.getContents(systemId="portal-archive",
                                   path=f"jobs/{a.uuid}/outputs/tapisjob.out").decode()
print(json.dumps(out))
"""


@pytest.fixture
def tools_world(transactional_db, settings, django_user_model, scripted_engines):
    """alice in projects demo and vision, her app "hello", a slave running it at once (tasks
    inline in the live server's thread), her API token and a Tapis token from the command."""
    scripted_engines.script({"echo hello": Behaviour(output=["hello"])})
    settings.PORTAL_TASK_MODE = "inline"
    settings.PORTAL_INSTANCE = f"test-{uuid.uuid4().hex[:12]}"
    user = django_user_model.objects.create_user("alice", "alice@example.org", "pw")
    for gid, name in ((4100, "demo"), (4101, "vision")):
        Membership.objects.create(user=user, project=Project.objects.create(name=name, gid=gid))
    add_slave("scripted", f"fake://tapipy-{uuid.uuid4().hex[:8]}")
    app_create(
        user=user,
        definition={
            "id": "hello",
            "version": "1.0",
            "containerImage": TEST_IMAGE,
            "command": "echo hello",
            "jobAttributes": {"resources": {"gpus": 0, "cpus": 1, "cpuMemoryGb": 1}},
        },
    )
    _, api_key = api_token_rotate(user=user)
    issued = io.StringIO()
    call_command("tapis_token", "alice", stdout=issued)
    return user, api_key, issued.getvalue().strip()


def test_tapipy_reaches_projects_search_systems_files_with_a_tapis_token(tools_world, live_server):
    user, api_key, jwt = tools_world
    later = (timezone.now() + timedelta(days=1)).isoformat()
    done = subprocess.run(
        [str(tapipy_python()), "-c", TOOLS_SCRIPT, f"{live_server.url}/api/tapis", jwt, later],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    uuids = out["uuids"]

    # Item 6: the project from notes, resources from Tapis' fields and notes.
    assert "notes.project" in out["no_project"]
    a, b = Job.objects.get(uuid=uuids["a"]), Job.objects.get(uuid=uuids["b"])
    assert (a.project.name, b.project.name) == ("demo", "vision")
    assert (a.cpus, a.cpu_memory_gb, a.max_duration_s, b.gpus) == (2, 2, 900, 1)
    assert out["a"] == {
        "coresPerNode": 2,
        "memoryMB": 2048,
        "maxMinutes": 15,
        "tags": ["nightly"],
        "notes": json.dumps({"project": "demo"}),
        "execSystemId": "1",
        "status": "FINISHED",
    }
    assert out["b_status"] == "FINISHED"
    # Item 8: searches, hiding, events, systems, files.
    assert out["search_query"] == ["in-demo", "in-vision"]
    assert out["search_sql"] == [uuids["waiting"]]
    assert out["search_whole"] == [[uuids["a"], 2]]
    assert out["hide"] == f"job {uuids['a']} hidden" and out["listed_hidden"] is False
    assert out["unhide"].endswith("shown again") and out["listed_shown"] is True
    assert out["events"] == [["PROGRESS", "checkpoint 1"]]
    assert Job.objects.get(uuid=uuids["waiting"]).status == "CANCELLED"
    assert out["systems"] == [["1", True], ["portal-archive", False]]
    assert out["exec_system"] == "1"
    assert out["archive_jobs"] == sorted([uuids["a"], uuids["b"], uuids["waiting"]])
    assert out["outputs"] == [f"jobs/{uuids['a']}/outputs/tapisjob.out"]
    assert out["content"] == "hello\n"
    # Item 9: the API token was not touched by the Tapis token.
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {api_key}")
    assert client.get("/api/gpulab/v4.0/jobs").status_code == 200
    assert TapisToken.objects.get(user=user).last_used is not None
