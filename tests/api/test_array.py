"""POST /api/portal/jobs/array: many jobs in one request, all or nothing."""

import copy
import json

import pytest

from jobs.models import Job, JobEvent, JobPullSecret
from tests.api.conftest import PORTAL, SECRET_IMAGE
from tests.conftest import HELLO_WORLD

pytestmark = pytest.mark.django_db
URL = PORTAL + "jobs/array"


@pytest.fixture
def post_array(member_client, slave, project):
    def do(body, *, client=None, query=""):
        return (client or member_client).post(
            URL + query, data=json.dumps(body), content_type="application/json"
        )

    return do


def doc(**resources):
    document = copy.deepcopy(HELLO_WORLD)
    document["request"]["resources"].update(resources)
    return document


def test_a_list_of_documents_becomes_jobs_in_order(
    post_array, member, project, recorded_tasks, django_capture_on_commit_callbacks
):
    documents = [doc(gpus=n % 2) for n in range(5)]
    for n, document in enumerate(documents):
        document["name"] = f"item-{n}"
    with django_capture_on_commit_callbacks(execute=True):
        response = post_array({"jobs": documents, "project": "vision"})
    assert response.status_code == 201, response.content
    uuids = response.json()["uuids"]
    assert len(uuids) == 5
    jobs = {str(job.uuid): job for job in Job.objects.all()}
    assert [jobs[u].name for u in uuids] == [f"item-{n}" for n in range(5)]
    assert [jobs[u].gpus for u in uuids] == [0, 1, 0, 1, 0]
    assert {(j.owner, j.project, j.status) for j in jobs.values()} == {(member, project, "QUEUED")}
    assert JobEvent.objects.filter(new_state="QUEUED", message="submitted").count() == 5
    # One tick for the whole array, not one per job.
    assert recorded_tasks.count(("jobs.tasks.scheduler_tick", ())) == 1


def test_a_sweep_merges_each_variation_into_the_template(post_array):
    template = doc()
    template["name"] = "sweep-${index}"
    template["request"]["docker"]["command"] = "train --lr ${index}"
    template["request"]["docker"]["environment"] = {"SEED": "1", "KEEP": "yes"}
    variations = [
        {},
        {"request": {"resources": {"gpus": 2}, "docker": {"environment": {"SEED": "2"}}}},
        {"description": None, "request": {"docker": {"environment": {"KEEP": None}}}},
    ]
    response = post_array({"template": template, "variations": variations})
    assert response.status_code == 201, response.content
    jobs = [Job.objects.get(uuid=u) for u in response.json()["uuids"]]
    assert [j.name for j in jobs] == ["sweep-0", "sweep-1", "sweep-2"]
    assert [j.request["docker"]["command"] for j in jobs] == [f"train --lr {i}" for i in range(3)]
    assert [j.gpus for j in jobs] == [1, 2, 1]
    envs = [j.request["docker"]["environment"] for j in jobs]
    assert envs == [{"SEED": "1", "KEEP": "yes"}, {"SEED": "2", "KEEP": "yes"}, {"SEED": "1"}]
    assert jobs[0].description == "Hello world!" and jobs[2].description is None


def test_every_bad_item_is_named_and_nothing_is_written(post_array):
    bad_gpus, bad_image = doc(gpus=-1), doc()
    bad_image["request"]["docker"]["image"] = ""
    response = post_array({"jobs": [doc(), bad_gpus, "not a job", doc(), bad_image]})
    assert response.status_code == 400
    errors = response.json()["errors"]
    assert any(e.startswith("jobs[1].request.resources.gpus: ") for e in errors), errors
    assert "jobs[2]: must be a job document (an object)" in errors
    assert any(e.startswith("jobs[4].request.docker.image: ") for e in errors), errors
    assert not any(e.startswith(("jobs[0]", "jobs[3]")) for e in errors)
    assert Job.objects.count() == 0 and JobEvent.objects.count() == 0


def test_sweep_errors_name_the_variation(post_array):
    response = post_array(
        {"template": doc(), "variations": [{}, {"request": {"resources": {"cpus": -3}}}]}
    )
    assert response.status_code == 400
    assert [e.split(":")[0] for e in response.json()["errors"]] == [
        "variations[1].request.resources.cpus"
    ]
    assert Job.objects.count() == 0


def test_an_item_no_slave_can_run_is_refused_at_its_index(post_array):
    response = post_array({"jobs": [doc(), doc(gpus=64)]})
    assert response.status_code == 400
    assert response.json()["errors"][0].startswith("jobs[1].request.resources: no registered slave")


@pytest.mark.parametrize(
    ("body", "error"),
    [
        ({}, "jobs: is required (or template with variations)"),
        ({"jobs": []}, "jobs: must not be empty"),
        ({"jobs": {}}, "jobs: must be a list"),
        (
            {"jobs": [{}], "template": {}},
            "jobs: give either jobs or template with variations, not both",
        ),
        ({"variations": [{}]}, "template: must be a job document (an object)"),
        (
            {"jobs": [{}], "hold": True},
            "hold: unknown key (allowed: jobs, template, variations, project)",
        ),
        ({"jobs": [HELLO_WORLD], "project": "nope"}, "project: no project 'nope'"),
    ],
)
def test_bad_envelopes(post_array, body, error):
    response = post_array(body)
    assert response.status_code == 400
    assert error in response.json()["errors"]
    assert Job.objects.count() == 0


def test_size_limit(post_array, settings):
    settings.PORTAL_ARRAY_MAX_JOBS = 3
    response = post_array({"template": doc(), "variations": [{}] * 4})
    assert response.status_code == 400
    assert response.json()["errors"] == ["variations: at most 3 jobs per request, not 4"]
    assert post_array({"template": doc(), "variations": [{}] * 3}).status_code == 201


def test_outsiders_and_anonymous_callers_are_refused(post_array, outsider_client, anon_client):
    assert (
        post_array({"jobs": [doc()], "project": "vision"}, client=outsider_client).status_code
        == 403
    )
    assert post_array({"jobs": [doc()], "project": "vision"}, client=anon_client).status_code == 401
    assert Job.objects.count() == 0


def test_hold_and_secrets(post_array):
    secret = doc()
    secret["request"]["docker"]["image"] = SECRET_IMAGE
    response = post_array({"jobs": [secret, doc()]}, query="?hold=true")
    assert response.status_code == 201
    jobs = [Job.objects.get(uuid=u) for u in response.json()["uuids"]]
    assert {j.status for j in jobs} == {"ONHOLD"}
    assert "s3cretPW" not in json.dumps(jobs[0].request)
    assert JobPullSecret.objects.get().job == jobs[0]
    assert JobPullSecret.objects.get().image == SECRET_IMAGE
