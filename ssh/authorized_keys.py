"""The keys in ``authorized_keys`` of a job's ``.ssh`` folder: GPULab's ``.ssh`` storage entry.

GPULab's job request page: "If you need access to the ~/.ssh dir used by the SSH server that
gives you access to the container (for example, to manually change the authorized_hosts file),
you need to mount it like this: {"hostPath": ".ssh", "containerPath": "/root/.ssh/"}". Here that
SSH server is the gateway, and the folder is the job owner's own (``<storage>/home/<user>/.ssh``
on the slave, kept private by ``jobs.execution.storage``): a job that mounts it lets in the
keys listed in its ``authorized_keys`` as well.

The file is read at each login through the job's engine (Docker's archive API, which resolves
paths inside the container: nothing on the slave outside the container's own view is ever
read), and trusted only as OpenSSH's sshd would:

- it must be a regular file (a link is never followed) of at most ``MAX_BYTES``;
- neither it nor the folder may be writable by group or others (sshd's StrictModes);
- a line with options (``from=``, ``command=``, ``restrict``, ...) is skipped: the gateway cannot
  enforce them, and a key its owner restricted must not get in unrestricted.
"""

from __future__ import annotations

import base64
import binascii
import io
import posixpath
import stat
import struct
import tarfile

from jobs.execution.storage import SSH_ALIAS

KEYS_FILE = "authorized_keys"
MAX_BYTES = 64 * 1024  # about 700 ed25519 or 90 RSA-4096 keys
_TAR_SLACK = 16 * 1024  # the archive's headers and padding around the file's bytes
_CERTIFICATE_SUFFIX = "-cert-v01@openssh.com"


def ssh_folder_of(request: dict | None) -> str | None:
    """Where the job's container has the owner's ``.ssh`` folder (the first ``.ssh`` storage
    entry's containerPath, without its trailing ``/``), or None when it does not mount it."""
    storage = ((request or {}).get("docker") or {}).get("storage") or []
    for item in storage:
        if (item.get("hostPath") or "").rstrip("/") != SSH_ALIAS:
            continue
        folder = (item.get("containerPath") or "").rstrip("/")
        if folder.startswith("/"):
            return folder
    return None


def _key_type(blob: bytes) -> str:
    """The key type an SSH public key blob names first (``string type``), or ""."""
    if len(blob) < 4:
        return ""
    (size,) = struct.unpack(">I", blob[:4])
    return blob[4 : 4 + size].decode("ascii", errors="replace") if len(blob) >= 4 + size else ""


def authorized_key_blobs(text: str) -> set[bytes]:
    """The decoded keys of the lines ``type base64 [comment]`` of an authorized_keys text.

    Comments, blank lines, lines with options and certificates are skipped: a line counts only
    when its first word is the key type its key names, as OpenSSH writes keys."""
    blobs = set()
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 2 or parts[0].startswith("#") or parts[0].endswith(_CERTIFICATE_SUFFIX):
            continue
        try:
            blob = base64.b64decode(parts[1], validate=True)
        except (binascii.Error, ValueError):
            continue
        if _key_type(blob) == parts[0]:
            blobs.add(blob)
    return blobs


def _writable_by_others(mode: int) -> bool:
    return bool(mode & (stat.S_IWGRP | stat.S_IWOTH))


def job_authorized_keys(*, engine, container_id: str, folder: str) -> tuple[set[bytes], str]:
    """The keys of ``folder/authorized_keys`` in the job's container, and why there are none
    ("" when some were read). ``engine`` errors are the caller's."""
    found = engine.path_stat(container_id, folder)
    if found is None or not stat.S_ISDIR(found["mode"]):
        return set(), f"{folder} is not a folder"
    if _writable_by_others(found["mode"]):
        return set(), f"{folder} is writable by group or others"
    path = posixpath.join(folder, KEYS_FILE)
    found = engine.path_stat(container_id, path)
    if found is None:
        return set(), f"{path} does not exist"
    if not stat.S_ISREG(found["mode"]):
        return set(), f"{path} is a link or not a regular file"
    if _writable_by_others(found["mode"]):
        return set(), f"{path} is writable by group or others"
    if found["size"] > MAX_BYTES:
        return set(), f"{path} is larger than {MAX_BYTES // 1024} KiB"
    data = _read_bounded(engine, container_id, path)
    if data is None:
        return set(), f"{path} changed while it was read (a link, or larger than the limit)"
    blobs = authorized_key_blobs(data.decode("utf-8", errors="replace"))
    return blobs, "" if blobs else f"{path} lists no key"


def _read_bounded(engine, container_id: str, path: str) -> bytes | None:
    """The bytes of the regular file ``path`` (at most MAX_BYTES), or None when the archive
    holds anything else: the file may have been swapped since its stat."""
    archive = bytearray()
    chunks = engine.archive_get(container_id, path)
    try:
        for chunk in chunks:
            archive += chunk
            if len(archive) > MAX_BYTES + _TAR_SLACK:
                return None
    finally:
        close = getattr(chunks, "close", None)
        if close is not None:
            close()
    try:
        with tarfile.open(fileobj=io.BytesIO(bytes(archive)), mode="r:") as tar:
            member = tar.next()
            if member is None or not member.isfile() or member.size > MAX_BYTES:
                return None
            source = tar.extractfile(member)
            return source.read(MAX_BYTES) if source is not None else None
    except tarfile.TarError:
        return None
