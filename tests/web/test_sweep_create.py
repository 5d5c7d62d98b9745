"""Create Job's sweeps: a pasted sweep document or the Sweep section's grid or list, previewed
and submitted as one array (one transaction, errors named by item), then the jobs list."""

import json

import pytest

from jobs.models import Job


@pytest.fixture
def create(member_client, project, slave):
    def do(document, **extra):
        if not isinstance(document, str):
            document = json.dumps(document)
        data = {"project": str(project.pk), "document": document, "hold": "0", **extra}
        return member_client.post("/jobs/new/", data, **extra.pop("headers", {}))

    return do


GRID = "request.docker.environment.LR = 0.1, 0.01\nrequest.docker.environment.BATCH = 32, 64"


def test_a_pasted_sweep_document_is_submitted_as_one_array(create, hello_world):
    # Today's main refused it: (document): must contain "request"...
    body = {
        "template": {**hello_world, "name": "lr-${index}"},
        "variations": [{"description": "a"}, {"description": "b"}, {}],
    }
    response = create(body)
    jobs = list(Job.objects.order_by("id"))
    assert response.status_code == 302, response.content.decode()[:2000]
    assert [j.name for j in jobs] == ["lr-0", "lr-1", "lr-2"]
    assert [j.description for j in jobs] == ["a", "b", hello_world["description"]]
    assert len({j.array_id for j in jobs}) == 1 and jobs[0].array_id is not None
    assert response["Location"] == f"/jobs/?sweep={jobs[0].array_id}"


def test_a_pasted_jobs_list_is_one_array_too(create, hello_world):
    response = create({"jobs": [hello_world, {**hello_world, "name": "second"}]})
    assert response.status_code == 302
    assert Job.objects.values("array_id").distinct().count() == 1
    assert Job.objects.count() == 2


def test_grid_sweep_makes_the_cartesian_product(create, hello_world):
    response = create(hello_world, sweep_mode="grid", sweep_grid=GRID)
    assert response.status_code == 302
    jobs = list(Job.objects.order_by("id"))
    environments = [j.request["docker"]["environment"] for j in jobs]
    assert environments == [
        {"LR": "0.1", "BATCH": 32},
        {"LR": "0.1", "BATCH": 64},
        {"LR": "0.01", "BATCH": 32},
        {"LR": "0.01", "BATCH": 64},
    ]
    assert [j.name for j in jobs] == [f"HelloWorld-{i}" for i in range(4)]
    assert len({j.array_id for j in jobs}) == 1


def test_list_sweep_one_job_per_line(create, hello_world):
    lines = 'description = fast; request.resources.cpus = 3\n{"description": "slow"}\n'
    response = create(hello_world, sweep_mode="list", sweep_list=lines)
    assert response.status_code == 302
    jobs = list(Job.objects.order_by("id"))
    assert [(j.description, j.cpus) for j in jobs] == [("fast", 3), ("slow", 2)]


def test_one_bad_variation_refuses_the_whole_sweep_naming_it(create, hello_world):
    lines = "request.resources.gpus = 1\nrequest.resources.gpus = -1\n"
    response = create(hello_world, sweep_mode="list", sweep_list=lines)
    assert response.status_code == 400
    assert not Job.objects.exists()
    html = response.content.decode()
    assert "<code>variations[1].request.resources.gpus</code>" in html


def test_a_grid_over_the_array_limit_is_refused_naming_the_field(create, hello_world, settings):
    settings.PORTAL_ARRAY_MAX_JOBS = 3
    response = create(hello_world, sweep_mode="grid", sweep_grid=GRID)
    assert response.status_code == 400
    assert not Job.objects.exists()
    html = response.content.decode()
    assert "<code>sweep_grid</code>" in html and "2 x 2 = 4 jobs: at most 3 jobs" in html


def test_a_pasted_sweep_over_the_limit_names_variations(create, hello_world, settings):
    settings.PORTAL_ARRAY_MAX_JOBS = 2
    response = create({"template": hello_world, "variations": [{}, {}, {}]})
    assert response.status_code == 400
    assert "<code>variations</code>: at most 2 jobs per request, not 3" in response.content.decode()


def test_preview_counts_the_jobs_and_shows_their_differing_values(create, hello_world):
    response = create(
        hello_world,
        sweep_mode="grid",
        sweep_grid=GRID,
        sweep_preview="1",
        headers={"HTTP_X_REQUESTED_WITH": "fetch"},
    )
    assert response.status_code == 200
    assert not Job.objects.exists()  # a preview submits nothing
    preview = response.context["preview"]
    assert preview["count"] == 4 and not preview["errors"]
    assert preview["paths"] == [
        "name",
        "request.docker.environment.LR",
        "request.docker.environment.BATCH",
    ]
    assert preview["rows"][3] == (3, ["HelloWorld-3", "0.01", "64"])
    html = response.content.decode()
    assert 'data-count="4"' in html and "<html" not in html  # the fragment alone


def test_preview_without_javascript_renders_the_page(create, hello_world):
    response = create(
        hello_world, sweep_mode="list", sweep_list="description = x", sweep_preview="1"
    )
    html = response.content.decode()
    assert response.status_code == 200 and "<html" in html and 'data-count="1"' in html
    assert 'id="sweep-list"' in html and "description = x" in html  # the section kept


def test_preview_names_a_bad_item(create, hello_world):
    response = create(
        hello_world, sweep_mode="list", sweep_list="request.resources.cpus = 0", sweep_preview="1"
    )
    errors = response.context["preview"]["errors"]
    assert [e["path"] for e in errors] == ["variations[0].request.resources.cpus"]


def test_sweep_mode_with_a_sweep_document_is_refused(create, hello_world):
    body = {"template": hello_world, "variations": [{}]}
    response = create(body, sweep_mode="grid", sweep_grid=GRID)
    assert response.status_code == 400 and not Job.objects.exists()
    assert "<code>sweep_mode</code>" in response.content.decode()


def test_the_editor_check_counts_a_pasted_sweep(member_client, hello_world):
    body = {"template": hello_world, "variations": [{}, {"request": {"resources": {"cpus": 0}}}]}
    answer = member_client.post("/jobs/new/convert", {"document": json.dumps(body)}).json()
    assert answer["kind"] == "array" and answer["count"] == 2 and not answer["ok"]
    assert [e["path"] for e in answer["errors"]] == ["variations[1].request.resources.cpus"]


def test_apply_fields_leaves_a_sweep_document_as_it_is(create, hello_world):
    body = {"template": hello_world, "variations": [{}]}
    response = create(body, apply_fields="1", name="renamed")
    assert response.status_code == 200 and not Job.objects.exists()
    assert "This is a sweep document" in response.content.decode()
    assert json.loads(response.context["form"]["document"].value()) == body
