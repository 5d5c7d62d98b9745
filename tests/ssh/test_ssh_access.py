"""Who the SSH gateway lets into which job, and what the Job JSON tells clients (no Docker).

The same rules run end to end with OpenSSH in tests/ssh/test_ssh_gateway.py.
"""

import datetime

import asyncssh
import pytest
from django.utils import timezone

from accounts.certs.services import (
    login_certificate_issue,
    login_certificate_revoke,
    openssh_fingerprint,
)
from accounts.models import Profile
from clusters.runtime.engine import _go_mode_to_posix
from jobs.api.gpulab_json import job_to_gpulab
from jobs.models import JobEvent
from ssh.access import (
    ssh_event_record,
    ssh_job_running,
    ssh_keys_withdrawn,
    ssh_login_check,
)
from ssh.authorized_keys import authorized_key_blobs, ssh_folder_of
from ssh.gateway import host_key_load_or_create
from ssh.sessions import Demux
from tests.web.factories import make_job

pytestmark = pytest.mark.django_db


def new_key() -> tuple[bytes, str, str]:
    """(blob, public line, fingerprint) of a fresh ed25519 key."""
    key = asyncssh.generate_private_key("ssh-ed25519")
    line = key.export_public_key().decode().strip()
    return key.public_data, line, key.get_fingerprint("sha256")


@pytest.fixture
def running(member, project, slave):
    def make(owner=None, keys=(), status="RUNNING"):
        job = make_job(owner=owner or member, project=project, status=status, slave=slave)
        job.request["extra"]["sshPubKeys"] = list(keys)
        job.container_id = "c0ffee"
        job.save()
        return job

    return make


def check(job, blob, fingerprint, username=None):
    return ssh_login_check(username=username or str(job.uuid), blob=blob, fingerprint=fingerprint)


def test_a_key_of_the_request_gets_in_and_names_the_container(running):
    blob, line, fingerprint = new_key()
    job = running(keys=[line])
    decision = check(job, blob, fingerprint)
    assert decision.allowed and decision.reason == "job request key"
    assert decision.target.container_id == "c0ffee"
    assert decision.target.job_uuid == str(job.uuid)


def test_other_keys_and_other_jobs_are_refused(running, make_user, project):
    from accounts.models import Membership

    blob, line, fingerprint = new_key()
    other_blob, other_line, other_fingerprint = new_key()
    bob = make_user("bob")
    Membership.objects.create(user=bob, project=project)
    mine = running(keys=[line])
    bobs = running(owner=bob, keys=[other_line])
    assert not check(mine, other_blob, other_fingerprint).allowed  # another user's key
    assert not check(bobs, blob, fingerprint).allowed  # my key, another user's job
    assert check(bobs, other_blob, other_fingerprint).allowed


def test_only_running_jobs(running):
    blob, line, fingerprint = new_key()
    for status in ("QUEUED", "STARTING", "FINISHED", "CANCELLED", "HALTED"):
        job = running(keys=[line], status=status)
        decision = check(job, blob, fingerprint)
        assert not decision.allowed and "no running job" in decision.reason, status


def test_unique_prefix_names_the_job(running):
    blob, line, fingerprint = new_key()
    job = running(keys=[line])
    assert check(job, blob, fingerprint, username=str(job.uuid)[:8]).allowed
    assert not check(job, blob, fingerprint, username=str(job.uuid)[:5]).allowed
    assert not check(job, blob, fingerprint, username="root").allowed


def test_profile_keys_get_in(running, member):
    blob, line, fingerprint = new_key()
    job = running(keys=[])
    assert not check(job, blob, fingerprint).allowed
    Profile.objects.create(user=member, ssh_public_keys=f"# comment\n{line}\n")
    assert check(job, blob, fingerprint).reason == "profile key"


def test_disabled_owner_is_refused(running, member):
    blob, line, fingerprint = new_key()
    job = running(keys=[line])
    member.is_active = False
    member.save()
    assert "disabled" in check(job, blob, fingerprint).reason


def pem_key(issued):
    from cryptography.hazmat.primitives import serialization

    public = serialization.load_pem_private_key(issued.pem, password=None).public_key()
    line = public.public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    ).decode()
    key = asyncssh.import_public_key(line)
    return key.public_data, line, key.get_fingerprint("sha256")


def test_login_certificate_key_until_revoked_or_expired(running, member, make_user):
    issued = login_certificate_issue(user=member)
    blob, line, fingerprint = pem_key(issued)
    assert issued.certificate.ssh_key_fingerprint == fingerprint
    # The owner's valid certificate gets in even when the job was submitted with other keys.
    job = running(keys=[])
    assert check(job, blob, fingerprint).reason == "login certificate"
    # Expired: refused, even though the job's request lists the key.
    job = running(keys=[line])
    issued.certificate.not_after = timezone.now() - datetime.timedelta(seconds=1)
    issued.certificate.save()
    decision = check(job, blob, fingerprint)
    assert not decision.allowed and "expired" in decision.reason
    # Revoked: refused.
    issued.certificate.not_after = timezone.now() + datetime.timedelta(days=1)
    issued.certificate.save()
    login_certificate_revoke(certificate=issued.certificate, user=member)
    decision = check(job, blob, fingerprint)
    assert not decision.allowed and "revoked" in decision.reason
    _, _, other = new_key()
    assert ssh_keys_withdrawn(fingerprints=[fingerprint, other]) == {fingerprint}
    # Somebody else's valid certificate is no key to this job.
    stranger = login_certificate_issue(user=make_user("eve"))
    s_blob, _, s_fingerprint = pem_key(stranger)
    assert not check(running(keys=[]), s_blob, s_fingerprint).allowed


def test_openssh_fingerprint_matches_openssh():
    _, line, fingerprint = new_key()
    assert openssh_fingerprint(line) == fingerprint


def test_job_json_tells_where_to_log_in_only_to_full_viewers(running, member, outsider, settings):
    settings.PORTAL_SSH_HOST, settings.PORTAL_SSH_PORT = "ssh.example.org", 2200
    job = running()
    resources = job_to_gpulab(job, viewer=member)["state"]["resources"]
    assert resources["sshHost"] == resources["sshProxyHost"] == "ssh.example.org"
    assert resources["sshPort"] == resources["sshProxyPort"] == 2200
    assert resources["sshUsername"] == resources["sshProxyUsername"] == str(job.uuid)
    # The name told is the one the gateway reads back (Job.ssh_username, the one rule).
    blob, line, fingerprint = new_key()
    keyed = running(keys=[line])
    told = job_to_gpulab(keyed, viewer=member)["state"]["resources"]["sshUsername"]
    assert told == keyed.ssh_username
    assert check(keyed, blob, fingerprint, username=told).target.job_id == keyed.pk
    hidden = job_to_gpulab(job, viewer=outsider)["state"]["resources"]
    assert not {k for k in hidden if k.startswith("ssh")}
    ended = running(status="FINISHED")
    assert not {k for k in job_to_gpulab(ended, viewer=member)["state"]["resources"] if "ssh" in k}


def test_running_check_and_history(running):
    job, ended = running(), running(status="FINISHED")
    assert ssh_job_running(job_ids=[job.pk, ended.pk]) == {job.pk}
    ssh_event_record(job_id=job.pk, message="SSH login from 10.0.0.1 with key SHA256:x")
    assert JobEvent.objects.filter(job=job, message__startswith="SSH login from 10.0.0.1").exists()


def test_host_key_made_once_and_private(tmp_path):
    path = tmp_path / "ssh" / "host_key"
    first = host_key_load_or_create(path)
    assert path.stat().st_mode & 0o777 == 0o600
    again = host_key_load_or_create(path)
    assert first.public_data == again.public_data


def test_demux_splits_frames_fed_in_pieces():
    frames = b"\x01\x00\x00\x00\x00\x00\x00\x03out" + b"\x02\x00\x00\x00\x00\x00\x00\x04err\n"
    demux = Demux()
    got = demux.feed(frames[:5]) + demux.feed(frames[5:13]) + demux.feed(frames[13:])
    assert got == [(1, b"out"), (2, b"err\n")]


def test_docker_file_modes_become_posix_modes():
    assert _go_mode_to_posix(0o644) == 0o100644
    assert _go_mode_to_posix((1 << 31) | 0o755) == 0o040755
    assert _go_mode_to_posix((1 << 27) | 0o777) == 0o120777


def test_authorized_keys_lines_count_only_as_openssh_writes_keys():
    """ssh.authorized_keys: a key in the job's .ssh/authorized_keys gets in only on a plain
    line; options the gateway cannot enforce, comments and mislabelled keys never."""
    plain, plain_line, _ = new_key()
    restricted, restricted_line, _ = new_key()
    relabelled, relabelled_line, _ = new_key()
    other, other_line, _ = new_key()
    text = "\n".join(
        [
            "# my keys",
            f"  {plain_line} me@laptop",
            f'from="10.0.0.1",no-pty {restricted_line}',
            "ssh-rsa " + relabelled_line.split()[1],  # an ed25519 key named as RSA
            f"#{other_line}",
            "garbage",
            "",
        ]
    )
    assert authorized_key_blobs(text) == {plain}
    assert not {restricted, relabelled, other} & authorized_key_blobs(text)


def test_the_ssh_folder_of_a_request():
    def request(*storage):
        return {"docker": {"storage": list(storage)}}

    seed = {"hostPath": ".ssh", "containerPath": "/root/.ssh/"}
    assert ssh_folder_of(request(seed)) == "/root/.ssh"
    assert ssh_folder_of(request({"hostPath": "/project", "containerPath": "/project"})) is None
    assert ssh_folder_of(request({"hostPath": ".ssh/", "containerPath": "/home/me/.ssh"})) == (
        "/home/me/.ssh"
    )
    assert ssh_folder_of({}) is None
