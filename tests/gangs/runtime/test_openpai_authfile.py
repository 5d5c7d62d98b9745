"""OpenPAI's authFile: registry credentials read from the project's storage at launch, used for
the pull only, the password never shown (gangs/authfile.py, docs/openpai.md)."""

import logging
import os

import pytest
from django.test import Client

from clusters.models import Slave
from clusters.runtime.errors import RuntimeFailure
from gangs.authfile import authfile_parse
from jobs.execution.runs import _ensure_image
from jobs.models import Job, JobEvent
from jobs.user_actions.services import job_submit

pytestmark = pytest.mark.django_db

PASSWORD = "pw-0f-the-registry"
IMAGE = "registry.example.org:5000/team/img:1"

CONFIG = {
    "jobName": "pai-auth",
    "image": IMAGE,
    "authFile": "$PAI_DEFAULT_FS_URI/secrets/registry.txt",
    "taskRoles": [
        {"name": "worker", "taskNumber": 2, "cpuNumber": 1, "memoryMB": 512, "gpuNumber": 0,
         "command": "true"},
    ],
}  # fmt: skip


class PullingEngine:
    """The two engine calls _ensure_image makes; records the pull."""

    def __init__(self):
        self.pulls = []

    def image_present(self, ref):
        return False

    def pull(self, repository, tag, *, username=None, password=None):
        self.pulls.append((repository, tag, username, password))


@pytest.fixture
def storage(settings, tmp_path):
    settings.PORTAL_STORAGE_BASE = str(tmp_path)
    return tmp_path / "project" / "vision"


@pytest.fixture
def task(member, project, slave, settings, storage):
    settings.PORTAL_TASK_MODE = "record"
    first = job_submit(user=member, project=project, document=CONFIG)
    Job.objects.filter(pk=first.pk).update(slave=slave)
    # A local slave (the portal reads storage of unix:// engines only); no engine is called.
    Slave.objects.filter(pk=slave.pk).update(docker_url="unix:///nonexistent.sock")
    return Job.objects.select_related("slave", "project", "owner").get(pk=first.pk)


def _write(storage, text: str, name="registry.txt"):
    folder = storage / "secrets"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(text)
    return folder / name


def test_parse_three_lines():
    parsed = authfile_parse(f"docker.io\nalice\n{PASSWORD}\n\n")
    assert (parsed.registry, parsed.username, parsed.password) == ("docker.io", "alice", PASSWORD)
    assert PASSWORD not in repr(parsed)
    assert authfile_parse("docker.io\nalice\n") is None
    assert authfile_parse("docker.io\nalice\npw\nextra\n") is None
    assert authfile_parse("\nalice\npw\n") is None


def test_accepted_at_submit_and_stored_without_content(task):
    assert task.openpai_config["authFile"] == "$PAI_DEFAULT_FS_URI/secrets/registry.txt"
    assert Job.objects.filter(gang_id=task.gang_id).count() == 2


def test_pull_uses_the_files_credentials_and_never_shows_the_password(
    task, storage, member, caplog
):
    _write(storage, f"registry.example.org:5000\nrobot\n{PASSWORD}\n")
    engine = PullingEngine()
    with caplog.at_level(logging.DEBUG):
        _ensure_image(engine, task)
    assert engine.pulls == [("registry.example.org:5000/team/img", "1", "robot", PASSWORD)]
    events = list(JobEvent.objects.filter(job=task).values_list("message", flat=True))
    assert any("authFile $PAI_DEFAULT_FS_URI/secrets/registry.txt" in m for m in events)
    assert all(PASSWORD not in m for m in events)
    assert PASSWORD not in caplog.text
    # Nowhere in what the owner reads back either.
    client = Client()
    client.force_login(member)
    for url in (
        f"/api/gpulab/v4.0/jobs/{task.uuid}",
        f"/api/portal/gangs/{task.uuid}/",
        f"/api/portal/jobs/{task.uuid}/openpai/",
        f"/jobs/{task.uuid}/",
    ):
        response = client.get(url)
        assert response.status_code == 200, url
        assert PASSWORD.encode() not in response.content, url


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (None, "cannot be read (no such file)"),
        ("registry.example.org:5000\nrobot\n", "must hold three lines"),
        (f"docker.io\nrobot\n{PASSWORD}\n", "names registry docker.io, the image is pulled from"),
    ],
)
def test_a_bad_auth_file_fails_the_launch_naming_it(task, storage, content, reason):
    if content is not None:
        _write(storage, content)
    engine = PullingEngine()
    with pytest.raises(RuntimeFailure) as failure:
        _ensure_image(engine, task)
    assert failure.value.permanent and engine.pulls == []
    message = str(failure.value)
    assert message.startswith("refused: authFile /project/secrets/registry.txt: ")
    assert reason in message and PASSWORD not in message


def test_a_link_is_never_followed(task, storage, tmp_path):
    outside = tmp_path / "elsewhere.txt"
    outside.write_text(f"registry.example.org:5000\nrobot\n{PASSWORD}\n")
    (storage / "secrets").mkdir(parents=True)
    os.symlink(outside, storage / "secrets" / "registry.txt")
    engine = PullingEngine()
    with pytest.raises(RuntimeFailure) as failure:
        _ensure_image(engine, task)
    assert "is a link or not a regular file" in str(failure.value) and engine.pulls == []


def test_remote_slave_cannot_read_it(task):
    task.slave.docker_url = "tcp://10.0.0.9:2376"
    with pytest.raises(RuntimeFailure) as failure:
        _ensure_image(PullingEngine(), task)
    assert "cannot read storage of remote slave" in str(failure.value)


def test_a_fifo_is_never_opened(task, storage):
    (storage / "secrets").mkdir(parents=True)
    os.mkfifo(storage / "secrets" / "registry.txt")  # opening it to read would block
    with pytest.raises(RuntimeFailure) as failure:
        _ensure_image(PullingEngine(), task)
    assert "is a link or not a regular file" in str(failure.value)
