"""The project, GPULab resources and scheduling reach the portal through fields tapipy passes
(issue 27, Tapis item 6): Tapis' own coresPerNode, memoryMB, maxMinutes, nodeCount,
execSystemId and tags, and ``notes`` (project, resources, scheduling) for what Tapis has no
field for. The tapipy test itself is in test_tapipy.py."""

import pytest

from accounts.models import Membership
from jobs.spec import SpecError
from tapis.submit import tapis_job_submit
from tests.tapis.conftest import seed_request


def _paths(error: SpecError) -> dict:
    """Path -> its messages, joined."""
    paths: dict[str, str] = {}
    for e in error.errors:
        paths[e.path] = f"{paths[e.path]} | {e.message}" if e.path in paths else e.message
    return paths


@pytest.fixture
def two_projects(member, other_project):
    Membership.objects.create(user=member, project=other_project)
    return member


def test_notes_name_the_project_of_a_user_in_two(app, two_projects, project, other_project):
    with pytest.raises(SpecError) as caught:
        tapis_job_submit(user=two_projects, request=seed_request())
    assert "notes.project" in _paths(caught.value)["project"]

    vision = tapis_job_submit(user=two_projects, request=seed_request(notes={"project": "vision"}))
    speech = tapis_job_submit(
        user=two_projects,
        request=seed_request(notes={"project": f"urn:publicid:IDN+portal+project+{'speech'}"}),
    )
    assert (vision.project, speech.project) == (project, other_project)
    # The notes stay the job's, as Tapis keeps them.
    assert vision.origin["tapis"]["notes"] == {"project": "vision"}


def test_tapis_fields_and_notes_set_resources_and_scheduling(app, member):
    job = tapis_job_submit(
        user=member,
        request=seed_request(
            coresPerNode=2,
            memoryMB=2500,
            maxMinutes=30,
            nodeCount=1,
            execSystemId="1",
            tags=["nightly", "project:vision"],
            notes={
                "resources": {"gpus": 2, "gpuModel": ["V100"]},
                "scheduling": {"restartable": True, "minDuration": "5 minutes"},
                "colleague": "kept as it is",
            },
        ),
    )
    assert (job.gpus, job.cpus, job.cpu_memory_gb, job.max_duration_s) == (2, 2, 3, 1800)
    assert job.requested_cluster_id == 1 and job.restartable and job.min_duration_s == 300
    assert job.origin["tapis"]["tags"] == ["nightly", "project:vision"]


def test_bad_notes_and_tags_are_named(app, member):
    request = seed_request(
        notes={"project": "nowhere", "resources": {"gpus": -1}, "scheduling": "soon"},
        tags=["ok", 7],
        execSystemId="portal-archive",
    )
    with pytest.raises(SpecError) as caught:
        tapis_job_submit(user=member, request=request)
    paths = _paths(caught.value)
    assert "no project 'nowhere'" in paths["notes.project"]
    assert "must be an object" in paths["notes.scheduling"]
    assert "tags[1]" in paths
    assert "runs no jobs" in paths["execSystemId"]
    with pytest.raises(SpecError) as caught:
        tapis_job_submit(user=member, request=seed_request(notes=["project", "vision"]))
    assert _paths(caught.value) == {"notes": "must be an object"}
    # Given twice, differently: refused rather than one silently winning.
    twice = seed_request(project="vision", notes={"project": "speech"})
    with pytest.raises(SpecError) as caught:
        tapis_job_submit(user=member, request=twice)
    assert "give it once" in _paths(caught.value)["notes.project"]
    with pytest.raises(SpecError) as caught:
        tapis_job_submit(user=member, request=seed_request(notes={"resources": {"gpus": -1}}))
    assert "request.resources.gpus" in _paths(caught.value)
