"""Who may log in to which job over SSH, and the job's history of SSH connections.

The SSH user name names the job (``Job.ssh_username``, its uuid, or a unique prefix of at least
6 characters of it): GPULab's model is one login per job. The offered key gets in only when

- the job is RUNNING on a slave, with a container, and its owner's account is active;
- the key is in the job's ``request.extra.sshPubKeys``, in the owner's profile SSH keys, is
  the key of one of the owner's valid login certificates (``gpulab-cli ssh`` logs in with
  ``ssh -i login.pem``), or, for a job that mounts the owner's ``.ssh`` folder, is listed in
  its ``authorized_keys`` (read in the job's container: ``ssh.authorized_keys``);
- and, when the key is that of a login certificate, the certificate is neither revoked nor
  expired (whatever list the key is also in).

Keys are compared as their decoded blobs; only fingerprints are ever written anywhere.
Synchronous (the gateway calls these in a thread).
"""

from __future__ import annotations

import base64
import binascii
import logging
from dataclasses import dataclass

from django.db import close_old_connections, connection
from django.utils import timezone

from accounts.models import LoginCertificate, Profile
from clusters.models import Slave
from clusters.services import engine_for
from jobs.models import Job
from jobs.states import JobStatus
from jobs.transitions import job_event_add
from ssh.authorized_keys import job_authorized_keys, ssh_folder_of

log = logging.getLogger("ssh")

MIN_PREFIX = 6


def _fresh_connection() -> None:
    """The gateway's threads live long: drop a connection the database may have closed (as
    Django does between requests), unless inside a transaction (tests)."""
    if not connection.in_atomic_block:
        close_old_connections()


@dataclass(frozen=True)
class SshTarget:
    """A running job an SSH connection was let into."""

    job_id: int
    job_uuid: str
    owner: str
    slave_id: int
    container_id: str
    engine_url: str = ""


@dataclass(frozen=True)
class SshDecision:
    allowed: bool
    reason: str
    target: SshTarget | None = None


def key_blob(line: str) -> bytes | None:
    """The decoded key of an OpenSSH public key line (``type base64 [comment]``), or None."""
    parts = (line or "").split()
    if len(parts) < 2:
        return None
    try:
        return base64.b64decode(parts[1], validate=True)
    except (binascii.Error, ValueError):
        return None


def _job_named(username: str) -> Job | None:
    """The running job ``username`` names: ``Job.ssh_username`` read back, whole or as a unique
    prefix."""
    name = (username or "").strip().lower()
    if len(name) < MIN_PREFIX or any(c not in "0123456789abcdef-" for c in name):
        return None
    jobs = Job.objects.select_related("owner", "slave").filter(status=JobStatus.RUNNING)
    if len(name) == 36:
        return jobs.filter(uuid=name).first()
    # A prefix: bounded by the number of running jobs.
    running = Job.objects.filter(status=JobStatus.RUNNING).values_list("pk", "uuid")
    matches = [pk for pk, uuid in running if str(uuid).startswith(name)]
    if len(matches) != 1:
        return None
    return jobs.filter(pk=matches[0]).first()


def ssh_login_check(*, username: str, blob: bytes, fingerprint: str, now=None) -> SshDecision:
    """May the key ``blob`` (fingerprint ``fingerprint``) log in as ``username``?"""
    _fresh_connection()
    now = now or timezone.now()
    job = _job_named(username)
    if job is None:
        return SshDecision(False, f"no running job {username!r}")
    if not job.slave_id or not job.container_id:
        return SshDecision(False, "the job has no container")
    if not job.owner.is_active:
        return SshDecision(False, "the job owner's account is disabled")
    assert job.slave is not None  # slave_id is set
    target = SshTarget(
        job_id=job.pk,
        job_uuid=str(job.uuid),
        owner=job.owner.username,
        slave_id=job.slave_id,
        container_id=job.container_id,
        engine_url=job.slave.docker_url,
    )
    certificates = list(LoginCertificate.objects.filter(ssh_key_fingerprint=fingerprint))
    for certificate in certificates:
        state = certificate.state_at(now)
        if state != "valid":
            return SshDecision(False, f"the key is that of a login certificate that is {state}")
    if any(c.user_id == job.owner_id for c in certificates):
        return SshDecision(True, "login certificate", target)
    request_keys = ((job.request or {}).get("extra") or {}).get("sshPubKeys") or []
    if any(key_blob(line) == blob for line in request_keys):
        return SshDecision(True, "job request key", target)
    profile = Profile.objects.filter(user_id=job.owner_id).first()
    if profile and any(key_blob(line) == blob for line in profile.ssh_key_list):
        return SshDecision(True, "profile key", target)
    folder = ssh_folder_of(job.request)
    if folder and blob in _folder_keys(job, folder):
        return SshDecision(True, "the job's .ssh/authorized_keys", target)
    return SshDecision(False, "the key is not one of the job's keys")


def _folder_keys(job: Job, folder: str) -> set[bytes]:
    """The keys of ``authorized_keys`` in the job's ``.ssh`` folder (read last: it costs a
    round trip to the job's engine); none when it cannot be read or trusted (logged)."""
    assert job.slave is not None  # only running jobs with a container get here
    engine = engine_for(job.slave)
    try:
        blobs, why_none = job_authorized_keys(
            engine=engine, container_id=job.container_id, folder=folder
        )
    except Exception as error:  # noqa: BLE001 - engine unreachable, container gone: no keys
        blobs, why_none = set(), f"cannot be read: {error}"
    finally:
        engine.close()
    if why_none:
        log.info("job %s: no keys from its .ssh folder: %s", job.uuid, why_none)
    return blobs


def ssh_job_running(*, job_ids: list[int]) -> set[int]:
    """Those of ``job_ids`` still RUNNING (one query)."""
    _fresh_connection()
    return set(
        Job.objects.filter(pk__in=job_ids, status=JobStatus.RUNNING).values_list("pk", flat=True)
    )


def ssh_keys_withdrawn(*, fingerprints: list[str], now=None) -> set[str]:
    """Those of ``fingerprints`` that are keys of login certificates no longer valid (revoked
    or expired since the login): their open sessions end (one query)."""
    _fresh_connection()
    now = now or timezone.now()
    rows = LoginCertificate.objects.filter(ssh_key_fingerprint__in=fingerprints)
    return {row.ssh_key_fingerprint for row in rows if row.state_at(now) != "valid"}


def ssh_event_record(*, job_id: int, message: str) -> None:
    """A line in the job's history (shown by ``gpulab-cli debug`` and on the job page)."""
    _fresh_connection()
    job = Job.objects.filter(pk=job_id).first()
    if job is not None:
        job_event_add(job=job, message=message)


def ssh_engine_for(*, slave_id: int):
    _fresh_connection()
    return engine_for(Slave.objects.get(pk=slave_id))
