"""Submitting from an app: arguments combined as the seed says, macros, inputs, refusals that
write nothing, and an ordinary portal job as the result."""

import shlex

import pytest

from jobs.models import Job, JobEvent
from jobs.spec import SpecError
from tapis.models import App
from tapis.submit import combine_args, tapis_job_submit
from tests.tapis.conftest import seed_request


def _paths(exc: SpecError) -> dict[str, str]:
    return {e.path: e.message for e in exc.errors}


def test_seed_submission_becomes_a_portal_job(app, member, project):
    job = tapis_job_submit(user=member, request=seed_request())
    job.refresh_from_db()
    assert (job.app_id, job.app_version, job.project, job.status) == (
        "classify",
        "0.1",
        project,
        "QUEUED",
    )
    words = shlex.split(job.request["docker"]["command"])
    # The app's command, the request's own arguments, then the app's (appended).
    assert words == [
        "python",
        "/app/classify.py",
        "--image_file",
        "/job/inputs/img/dog.jpg",
        "--verbose",
        "--model",
        "resnet",
        "--out",
        "/job/outputs",
    ]
    assert job.request["docker"]["environment"] == {
        "JOB_WORKING_DIR": "/job",
        "JOB_INPUT_DIR": "/job/inputs",
        "JOB_OUTPUT_DIR": "/job/outputs",
        "_tapisAppId": "classify",
        "_tapisAppVersion": "0.1",
        "_tapisJobName": "img-classifier-job",
        "_tapisJobOwner": "alice",
        "_tapisJobUUID": str(job.uuid),
        "_tapisExecSystemExecDir": "/job",
        "_tapisExecSystemInputDir": "/job/inputs",
        "_tapisExecSystemOutputDir": "/job/outputs",
        "RUN_ID": str(job.uuid),
        "MODE": "fast",
    }
    assert job.requested_cluster_id == 1
    assert job.file_inputs == [
        {"name": "image", "source": "/project/data/dog.jpg", "target": "img/dog.jpg"}
    ]
    assert list(job.events.exclude(stage="").values_list("stage", flat=True)) == ["PENDING"]
    assert job.origin["tapis"]["appId"] == "classify"


def test_macros_in_arguments_and_environment(app, member):
    request = seed_request(name="macro-job")
    request["parameterSet"]["appArgs"].append(
        {"arg": "${JobName}:${JobOwner}:${AppId}:${AppVersion}:${JobUUID}:${JobInputDir}"}
    )
    request["parameterSet"]["envVariables"] = [{"key": "WHERE", "value": "${JobWorkingDir}"}]
    job = tapis_job_submit(user=member, request=request)
    assert (
        f"macro-job:alice:classify:0.1:{job.uuid}:/job/inputs" in job.request["docker"]["command"]
    )
    assert job.request["docker"]["environment"]["WHERE"] == "/job"


def test_argument_modes(app):
    errs = []
    by_default = combine_args(
        app,
        [{"arg": "--model m"}, {"name": "model", "arg": "--model x"}],
        errs,
        "p",
    )
    assert errs == []
    assert by_default == ["--model m", "--verbose", "--model x", "--out ${JobOutputDir}"]
    dropped = combine_args(
        app,
        [
            {"name": "model", "arg": "--model x"},
            {"name": "out", "arg": "", "include": False},
            {"name": "debug", "arg": ""},
        ],
        errs,
        "p",
    )
    assert errs == []
    assert dropped == ["--verbose", "--model x", "--debug"]


def test_refusals_name_every_field_and_write_nothing(app, member):
    jobs, events = Job.objects.count(), JobEvent.objects.count()
    request = {
        "name": "",
        "appId": "classify",
        "appVersion": "0.1",
        "archiveSystemId": "ignored",  # a Tapis field the portal accepts and ignores
        "warp": 9,
        "parameterSet": {
            "appArgs": [
                {"name": "verbose", "arg": "--quiet"},
                {"arg": "", "meta": {"name": "x", "required": True}},
            ]
        },
        "fileInputs": [
            {"name": "labels", "sourceUrl": "https://evil.example.com/x"},
            {"name": "extra", "sourceUrl": "/project/../etc/passwd"},
        ],
        "nodeCount": 2,
    }
    with pytest.raises(SpecError) as caught:
        tapis_job_submit(user=member, request=request)
    paths = _paths(caught.value)
    assert paths["name"] == "is required"
    assert paths["warp"] == "unknown field"
    assert "fixed by the app" in paths["parameterSet.appArgs[0].name"]
    assert "has no value" in paths["parameterSet.appArgs[1].arg"]
    assert "required argument 'model' is missing" in paths["parameterSet.appArgs"]
    assert "required input 'image' is missing" in paths["fileInputs"]
    assert "not allowed" in paths["fileInputs[0].sourceUrl"]
    assert "'..'" in paths["fileInputs[1].sourceUrl"]
    assert "must be 1" in paths["nodeCount"]
    assert "archiveSystemId" not in paths
    assert (Job.objects.count(), JobEvent.objects.count()) == (jobs, events)
    assert not App.objects.get(pk=app.pk).locked


def test_gpulab_rules_refuse_and_write_nothing(app, member):
    request = seed_request(resources={"gpus": -1})
    with pytest.raises(SpecError) as caught:
        tapis_job_submit(user=member, request=request)
    assert "request.resources.gpus" in _paths(caught.value)
    assert not Job.objects.exists() and not App.objects.get(pk=app.pk).locked


def test_allowed_url_inputs(app, member, settings):
    settings.PORTAL_INPUT_ALLOWED_HOSTS = ["data.example.org"]
    request = seed_request()
    request["fileInputs"] = [
        {"name": "image", "sourceUrl": "https://data.example.org/dog.jpg"},
        {"name": "weights", "sourceUrl": "https://data.example.org/w.bin", "targetPath": "w.bin"},
    ]
    job = tapis_job_submit(user=member, request=request)
    assert [i["target"] for i in job.file_inputs] == ["img/dog.jpg", "w.bin"]


def test_credentials_in_input_urls_are_refused(app, member, settings):
    settings.PORTAL_INPUT_ALLOWED_HOSTS = ["data.example.org"]
    request = seed_request()
    request["fileInputs"] = [{"name": "image", "sourceUrl": "https://u:pw@data.example.org/x"}]
    with pytest.raises(SpecError) as caught:
        tapis_job_submit(user=member, request=request)
    assert "credentials" in _paths(caught.value)["fileInputs[0].sourceUrl"]
    assert "pw" not in str(caught.value.errors)


def test_resources_override_the_app(app, member):
    job = tapis_job_submit(
        user=member, request=seed_request(coresPerNode=3, memoryMB=3000, maxMinutes=20)
    )
    assert (job.cpus, job.cpu_memory_gb, job.max_duration_s) == (3, 3, 1200)


def test_invisible_app_is_refused(app, outsider):
    with pytest.raises(SpecError) as caught:
        tapis_job_submit(user=outsider, request=seed_request(project="speech"))
    assert "no app classify version 0.1" in _paths(caught.value)["appId"]


def test_job_is_seen_by_the_gpulab_api(app, member, member_client_gpulab):
    job = tapis_job_submit(user=member, request=seed_request())
    answer = member_client_gpulab.get(f"/api/gpulab/v4.0/jobs/{job.uuid}")
    assert answer.status_code == 200
    assert answer.json()["request"]["docker"]["command"] == job.request["docker"]["command"]


@pytest.fixture
def member_client_gpulab(member):
    from rest_framework.test import APIClient

    from accounts.tokens import api_token_rotate

    _, key = api_token_rotate(user=member)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client
