"""Create Job: fields and JSON document, v1 conversion, inline errors, warnings, hold, clone."""

import json

import pytest

from jobs.models import Job
from tests.web.factories import make_job

V1 = {
    "jobDefinition": {
        "name": "v1job",
        "description": "from the old format",
        "clusterId": 1,
        "dockerImage": "debian:stable",
        "jobType": "BATCH",
        "command": "echo hi",
        "resources": {"cpuCores": 2, "gpus": 1, "systemMemory": 2000},
    }
}


def post(client, document, **extra):
    data = {"project": str(extra.pop("project_id")), "document": document, **extra}
    return client.post("/jobs/new/", data)


@pytest.fixture
def create(member_client, project, slave):
    def do(document, **extra):
        if not isinstance(document, str):
            document = json.dumps(document)
        return post(member_client, document, project_id=project.pk, **extra)

    return do


def test_page_starts_from_hello_world(member_client, project):
    response = member_client.get("/jobs/new/")
    html = response.content.decode()
    assert response.status_code == 200
    form = response.context["form"]
    assert json.loads(form["document"].value())["name"] == "HelloWorld"
    assert form["image"].value() == "debian:stable"
    assert 'id="template-hello"' in html and 'id="template-restartable"' in html
    assert 'id="job-templates"' in html  # the examples, for the editor script
    assert "/static/js/job-editor.js" in html
    assert f'<option value="{project.pk}" selected>vision</option>' in html


def test_restartable_template(member_client, project):
    form = member_client.get("/jobs/new/?template=restartable").context["form"]
    doc = json.loads(form["document"].value())
    assert doc["request"]["scheduling"]["restartable"] is True
    assert form["restartable"].value() is True


def test_submit_v2_queues_the_job(create, member, hello_world):
    response = create(hello_world, hold="0")
    job = Job.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/jobs/{job.uuid}/"
    assert job.status == "QUEUED" and job.owner == member and job.name == "HelloWorld"


def test_submit_on_hold(create, hello_world):
    create(hello_world, hold="1")
    assert Job.objects.get().status == "ONHOLD"


def test_submit_v1_converts(create, member_client):
    response = create(V1, hold="0")
    job = Job.objects.get()
    assert response.status_code == 302
    assert job.name == "v1job" and job.cpus == 2 and job.cpu_memory_gb == 2
    follow = member_client.get(response["Location"])
    assert any("converted from a v1 jobDefinition" in str(m) for m in follow.context["messages"])


def test_v2_errors_show_field_paths_next_to_fields_and_in_the_editor(create, hello_world):
    hello_world["request"]["resources"]["gpus"] = -1
    hello_world["request"]["docker"]["image"] = "Not An Image"
    response = create(hello_world)
    assert response.status_code == 400
    assert not Job.objects.exists()
    form = response.context["form"]
    assert any("request.resources.gpus" in e for e in form.errors["gpus"])
    assert any("request.docker.image" in e for e in form.errors["image"])
    html = response.content.decode()
    assert 'id="job-json-errors"' in html
    assert "<code>request.resources.gpus</code>" in html
    assert "<code>request.docker.image</code>" in html
    # The user's text stays in the editor.
    assert "Not An Image" in html


def test_bad_json_shows_line_and_column(create):
    text = '{\n  "name": "x",\n  "request": {\n    "resources": {,}\n  }\n}'
    response = create(text)
    assert response.status_code == 400
    html = response.content.decode()
    assert "<code>(json)</code>" in html
    assert "line 4 column" in html
    assert 'data-goto-line="4"' in html


def test_v1_errors_name_v1_fields(create):
    doc = json.loads(json.dumps(V1))
    doc["jobDefinition"]["resources"]["cpuCores"] = 0
    response = create(doc)
    assert response.status_code == 400
    assert any(
        "jobDefinition.resources.cpuCores" in e for e in response.context["form"].errors["cpus"]
    )


def test_shell_operators_warn_but_submit(create, member_client, hello_world):
    hello_world["request"]["docker"]["command"] = "python train.py > out.log"
    response = create(hello_world)
    assert response.status_code == 302
    follow = member_client.get(response["Location"])
    warnings = [str(m) for m in follow.context["messages"] if m.level_tag == "warning"]
    assert warnings and "shell operators (>)" in warnings[0]


def test_shell_wrapped_command_does_not_warn(create, member_client, hello_world):
    hello_world["request"]["docker"]["command"] = "bash -c 'python train.py > out.log'"
    response = create(hello_world)
    follow = member_client.get(response["Location"])
    assert not [m for m in follow.context["messages"] if m.level_tag == "warning"]


def test_project_must_be_one_of_mine(outsider_client, project, hello_world, slave):
    response = post(outsider_client, json.dumps(hello_world), project_id=project.pk)
    assert response.status_code == 400
    assert "project" in response.context["form"].errors
    assert not Job.objects.exists()


def test_no_js_apply_fields_rewrites_the_document(create, hello_world):
    response = create(
        hello_world,
        apply_fields="1",
        name="renamed",
        image="ubuntu:24.04",
        command='["sh", "-c", "nvidia-smi | head"]',
        gpus="2",
        cpus="4",
        cpu_memory_gb="8",
        gpu_model="V100, A100",
        cluster="",
        min_duration="1 hour",
        max_duration="",
        restartable="on",
    )
    assert response.status_code == 200
    assert not Job.objects.exists()
    doc = json.loads(response.context["form"]["document"].value())
    assert doc["name"] == "renamed"
    assert doc["request"]["docker"]["image"] == "ubuntu:24.04"
    assert doc["request"]["docker"]["command"] == ["sh", "-c", "nvidia-smi | head"]
    assert doc["request"]["resources"] == {
        "clusterId": None,
        "gpus": 2,
        "cpus": 4,
        "cpuMemoryGb": 8,
        "gpuModel": ["V100", "A100"],
    }
    assert doc["request"]["scheduling"] == {
        "interactive": False,
        "restartable": True,
        "minDuration": "1 hour",
    }


def test_empty_document_submits_the_fields(create):
    response = create(
        "",
        name="from-fields",
        image="debian:stable",
        gpus="0",
        cpus="1",
        cpu_memory_gb="1",
        cluster="1",
        hold="1",
    )
    assert response.status_code == 302
    job = Job.objects.get()
    assert job.name == "from-fields" and job.gpus == 0 and job.status == "ONHOLD"


def test_clone_prefills_for_members_only(member_client, outsider_client, member, project):
    job = make_job(owner=member, project=project, name="to-clone", image="vision/img:7")
    form = member_client.get(f"/jobs/new/?clone={job.uuid}").context["form"]
    doc = json.loads(form["document"].value())
    assert doc["name"] == "to-clone" and doc["request"]["docker"]["image"] == "vision/img:7"
    assert form["project"].value() == str(project.pk)
    response = outsider_client.get(f"/jobs/new/?clone={job.uuid}")
    html = response.content.decode()
    assert "to-clone" not in html and "vision/img" not in html
    assert any("Only members" in str(m) for m in response.context["messages"])


# --- the convert endpoint (used by the editor script) ------------------------------------


def convert(client, text):
    response = client.post("/jobs/new/convert", {"document": text})
    assert response.status_code == 200
    return response.json()


def test_convert_v1_in_place(member_client):
    answer = convert(member_client, json.dumps(V1))
    assert answer["ok"] and answer["converted"]
    doc = json.loads(answer["document"])
    assert "jobDefinition" not in doc
    assert doc["request"]["resources"]["cpus"] == 2
    assert doc["request"]["resources"]["cpuMemoryGb"] == 2
    assert doc["request"]["docker"]["image"] == "debian:stable"


def test_convert_reports_paths_lines_and_warnings(member_client, hello_world):
    answer = convert(member_client, '{"name": "x",\n "request": ')
    assert not answer["ok"] and answer["errors"][0]["path"] == "(json)"
    assert answer["errors"][0]["line"] == 2 and answer["errors"][0]["column"]

    hello_world["request"]["resources"]["cpus"] = 0
    hello_world["request"]["docker"]["command"] = "make && make test"
    answer = convert(member_client, json.dumps(hello_world))
    assert not answer["ok"] and not answer["converted"]
    assert {"path": "request.resources.cpus", "field": "cpus"}.items() <= answer["errors"][
        0
    ].items()
    assert "shell operators (&&)" in answer["warnings"][0]


def test_convert_needs_post(member_client):
    assert member_client.get("/jobs/new/convert").status_code == 405
