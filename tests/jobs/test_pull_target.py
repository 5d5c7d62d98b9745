"""What a job's image becomes at launch: pinned images are pulled and run by digest."""

import copy

import docker
import pytest

from clusters.runtime.engine import DockerEngine
from clusters.runtime.errors import RuntimeFailure
from jobs.execution.container_spec import pull_target
from jobs.models import Job
from jobs.user_actions.services import job_submit
from tests.conftest import HELLO_WORLD

pytestmark = pytest.mark.django_db

DIGEST = "sha256:" + "0123456789abcdef" * 4


def submit_image(member, project, image):
    document = copy.deepcopy(HELLO_WORLD)
    document["request"]["docker"]["image"] = image
    return job_submit(user=member, project=project, document=document)


@pytest.mark.parametrize(
    "image,repository,tag,reference,username",
    [
        ("debian:stable", "debian", "stable", "debian:stable", None),
        ("debian", "debian", "latest", "debian:latest", None),
        (
            "registry.example.org:5000/team/img:1",
            "registry.example.org:5000/team/img",
            "1",
            "registry.example.org:5000/team/img:1",
            None,
        ),
        (f"busybox@{DIGEST}", f"busybox@{DIGEST}", "", f"busybox@{DIGEST}", None),
        # the tag beside a digest is for people; Docker pulls and runs the digest
        (f"busybox:latest@{DIGEST}", f"busybox@{DIGEST}", "", f"busybox@{DIGEST}", None),
        (f"busybox:1.36@{DIGEST}", f"busybox@{DIGEST}", "", f"busybox@{DIGEST}", None),
        (
            "u:s3cretPW@registry.example.org/team/img:1",
            "registry.example.org/team/img",
            "1",
            "registry.example.org/team/img:1",
            "u",
        ),
    ],
)
def test_pull_target(member, project, slave, image, repository, tag, reference, username):
    job = submit_image(member, project, image)
    target = pull_target(job)
    assert (target.repository, target.tag, target.reference) == (repository, tag, reference)
    assert target.username == username
    assert (target.password == "s3cretPW") == (username is not None)


class _Sent(Exception):
    pass


def test_the_engine_pulls_a_digest_by_digest(monkeypatch):
    """Down to the Docker API call: fromImage=name, tag=the digest (what `docker pull
    name@sha256:...` sends), never "latest" and never the digest mangled into a tag."""
    engine = DockerEngine("tcp://127.0.0.1:1")
    engine._client = docker.APIClient(base_url="tcp://127.0.0.1:1", version="1.43")
    sent = {}

    def fake_post(url, params=None, **kwargs):
        sent.update(url=url, params=params)
        raise _Sent

    monkeypatch.setattr(engine._client, "_post", fake_post)
    with pytest.raises(_Sent):
        engine.pull(f"registry.example.org/team/img@{DIGEST}", "")
    assert sent["url"].endswith("/images/create")
    assert sent["params"] == {"tag": DIGEST, "fromImage": "registry.example.org/team/img"}


def test_a_stored_image_that_no_longer_parses_fails_the_launch(member, project, slave):
    """A job queued before the grammar got stricter is failed with the reason, not crashed."""
    job = submit_image(member, project, "debian:stable")
    request = dict(job.request)
    request["docker"] = {**request["docker"], "image": "Debian:Stable"}
    Job.objects.filter(pk=job.pk).update(request=request)
    job.refresh_from_db()
    with pytest.raises(RuntimeFailure) as caught:
        pull_target(job)
    assert caught.value.permanent
    assert "must be lowercase" in str(caught.value)
