"""OpenPAI's ``authFile``: registry credentials read from the project's storage at launch
(docs/openpai.md, "authFile").

The file holds three lines, OpenPAI's format: the registry (``docker.io`` for Docker Hub), the
user name and the password. It is read on the slave's storage right before the pull, never
following a link (the walk of ``jobs.execution.storage`` checks the folders; the file
itself is opened with O_NOFOLLOW below the verified folder), and only used for a pull from the
registry it names. The password lives in memory for the pull only: it is never stored on the
job, shown, put in an event or logged; refusals name the path and the rule, never the content.
"""

from __future__ import annotations

import errno
import os
import posixpath
import stat
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from clusters.runtime.spec import refused
from gangs.openpai_config import PROJECT_STORAGE_ROOT, storage_path
from jobs.execution.storage import StorageRefused, resolve_mount, slave_roots, storage_prepare
from jobs.models import Job
from jobs.spec.images import parse_image

MAX_BYTES = 64 * 1024  # three short lines; a bigger file is not an authFile
DOCKER_HUB = frozenset({"docker.io", "index.docker.io", "registry-1.docker.io"})


@dataclass(frozen=True)
class AuthFile:
    registry: str
    username: str
    password: str = ""

    def __repr__(self) -> str:  # never the password, whoever prints it
        return f"AuthFile(registry={self.registry!r}, username={self.username!r})"


def authfile_parse(text: str) -> AuthFile | None:
    """The three lines (registry, user, password; blank lines after them ignored), or None."""
    lines = text.splitlines()
    while lines and not lines[-1].strip():
        lines.pop()
    if len(lines) != 3 or not lines[0].strip() or not lines[1].strip() or not lines[2]:
        return None
    return AuthFile(lines[0].strip(), lines[1].strip(), lines[2].rstrip("\r"))


def _registry_key(registry: str | None) -> str:
    if registry is None:
        return "docker.io"
    host = registry.strip().lower().removeprefix("https://").removeprefix("http://").rstrip("/")
    return "docker.io" if host in DOCKER_HUB else host


def _read_nofollow(folder: str, name: str) -> bytes:
    """The file ``name`` in the (verified) ``folder``: a regular file, never through a link."""
    dir_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        # Looked at before it is opened: a job may have made a FIFO or a device node there,
        # and opening some devices has effects of its own.
        before = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        if not stat.S_ISREG(before.st_mode):
            raise OSError(errno.ELOOP, "not a regular file")
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dir_fd)
    finally:
        os.close(dir_fd)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or (info.st_dev, info.st_ino) != (
            before.st_dev,
            before.st_ino,
        ):
            raise OSError(errno.ELOOP, "not a regular file")
        if info.st_size > MAX_BYTES:
            raise OSError(f"larger than {MAX_BYTES // 1024} KiB")
        return os.read(fd, MAX_BYTES + 1)
    finally:
        os.close(fd)


def authfile_credentials(job: Job) -> AuthFile | None:
    """The credentials of the job's ``authFile`` (None when it has none), read on its slave.

    Raises a permanent ``RuntimeFailure`` ("refused: authFile ...": the job fails with that
    reason) when the file cannot be read there, is not three lines, or names another registry
    than the image's.
    """
    config = job.openpai_config or {}
    value = config.get("authFile")
    if not value:
        return None
    path = storage_path(value)  # /a/b/file in the project's storage
    shown = PROJECT_STORAGE_ROOT + path
    slave = job.slave
    assert slave is not None  # read when the job is launched on its slave
    if not slave.docker_url.startswith("unix://"):
        # The portal reads storage on local slaves only (docs/runtime.md, remote slaves).
        raise refused(
            f"authFile {shown}: the portal cannot read storage of remote slave {slave.name}"
        )
    folder, name = posixpath.split(shown)
    item = {"hostPath": folder + "/", "containerPath": folder + "/"}
    try:
        mount = resolve_mount(
            item=item,
            index=0,
            roots=slave_roots(slave),
            project=job.project.name,
            user=job.owner.username,
        )
        assert mount is not None  # a host folder (only tmpfs has none)
        mount = storage_prepare(
            mount=mount, gid=job.project.gid, base=Path(settings.PORTAL_STORAGE_BASE)
        )
        data = _read_nofollow(mount.host_path, name)
    except StorageRefused as error:
        raise refused(f"authFile {shown}: {error.message}") from None
    except OSError as error:
        if isinstance(error, FileNotFoundError):
            reason = "no such file"
        elif error.errno in (errno.ELOOP, errno.ENOTDIR, errno.EISDIR):
            reason = "is a link or not a regular file"
        else:
            reason = error.strerror or str(error)
        raise refused(f"authFile {shown}: cannot be read ({reason})") from None
    try:
        parsed = authfile_parse(data.decode("utf-8-sig"))
    except UnicodeDecodeError:
        parsed = None
    if parsed is None:
        raise refused(f"authFile {shown}: must hold three lines: registry, username, password")
    ref = parse_image(job.request["docker"]["image"])
    wanted = _registry_key(ref.registry if ref is not None else None)
    if _registry_key(parsed.registry) != wanted:
        # Credentials go to the registry they were written for, never to another one.
        raise refused(
            f"authFile {shown}: names registry {parsed.registry}, the image is pulled from {wanted}"
        )
    return parsed
