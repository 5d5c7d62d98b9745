"""No response ever contains a registry password: a job submitted with
``user:s3cretPW@registry...`` is read back through every endpoint by every kind of caller, and
every response body of the test is searched for the password."""

import copy
import json

import pytest

from jobs.execution.logs import job_log_archive
from jobs.models import Job, JobPullSecret
from tests.api.conftest import API, PORTAL, SECRET_IMAGE, put_state
from tests.conftest import HELLO_WORLD

pytestmark = pytest.mark.django_db

PASSWORD = b"s3cretPW"


def _secret_document():
    document = copy.deepcopy(HELLO_WORLD)
    document["request"]["docker"]["image"] = SECRET_IMAGE
    return document


def test_no_response_contains_the_registry_password(clients, responses, submit_api, slave):
    submitted = submit_api(_secret_document())
    assert submitted.status_code == 201
    job = Job.objects.get(uuid=submitted.content.decode())
    # the full image is kept for the pull only; the stored request has XXXX
    assert JobPullSecret.objects.get(job=job).image == SECRET_IMAGE
    assert "s3cretPW" not in json.dumps(job.request)
    put_state(job, "RUNNING", slave=slave, gpu_ids=[0])
    job_log_archive(job=job, data=b"pulling registry.example.org:5000/team/img:1\n")
    v1 = {
        "jobDefinition": {
            "name": "v1",
            "clusterId": 1,
            "dockerImage": SECRET_IMAGE,
            "command": "",
            "resources": {"gpus": 0, "cpuCores": 1, "systemMemory": 1000},
        }
    }

    for client in clients.values():
        client.get(API + "jobs")
        client.get(API + "jobs?allowed_states=RUNNING&page_size=200")
        client.get(f"{API}jobs/{job.uuid}")
        client.get(f"{API}jobs/{job.uuid}/debug")
        client.get(f"{API}jobs/{job.uuid}/log")
        client.get(f"{API}jobs/{job.uuid}/log", HTTP_RANGE="bytes=0-")
        client.get(f"{PORTAL}jobs/{job.uuid}/explain")
        client.get(API + "slaves")
        client.get(API + "clusters")
        client.post(PORTAL + "convert", data=_secret_document(), format="json")
        client.post(PORTAL + "convert", data=v1, format="json")
        client.post(
            API + "jobs", data=json.dumps(_secret_document()), content_type="application/json"
        )
        # an invalid document that carries the password must not echo it in the errors
        broken = _secret_document()
        broken["request"]["resources"]["gpus"] = -1
        client.post(API + "jobs", data=json.dumps(broken), content_type="application/json")
        client.post(PORTAL + "convert", data=broken, format="json")
        unparsable = _secret_document()
        unparsable["request"]["docker"]["image"] = "user:s3cretPW@Bad Image!"
        client.post(API + "jobs", data=json.dumps(unparsable), content_type="application/json")
        client.post(PORTAL + "convert", data=unparsable, format="json")

    assert len(responses) > 50
    leaks = [r for r in responses if PASSWORD in r.content]
    assert not leaks, [(r.request["PATH_INFO"], r.content[:200]) for r in leaks]


def test_members_see_xxxx_others_see_hidden(member_client, outsider_client, submit_api, slave):
    job_uuid = submit_api(_secret_document()).content.decode()
    mine = member_client.get(f"{API}jobs/{job_uuid}").json()
    theirs = outsider_client.get(f"{API}jobs/{job_uuid}").json()
    assert mine["request"]["docker"]["image"] == "user:XXXX@registry.example.org:5000/team/img:1"
    assert theirs["request"]["docker"]["image"] == "hidden"


def test_convert_masks_the_password(member_client):
    converted = member_client.post(PORTAL + "convert", data=_secret_document(), format="json")
    assert converted.status_code == 200
    image = converted.json()["request"]["docker"]["image"]
    assert image == "user:XXXX@registry.example.org:5000/team/img:1"
