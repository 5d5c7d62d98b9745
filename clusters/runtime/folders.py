"""Folders a container gets before it starts (``ContainerSpec.folders``), as one tar archive.

Docker creates nothing but the working directory, and that one belongs to root: a job running
as another user could not write its outputs. The engine unpacks this archive into the created
container with Docker's "copy UID/GID" option, so each folder belongs to the container's user.
"""

import io
import posixpath
import tarfile


def folders_tar(folders) -> bytes:
    """A tar of empty directories (parents first, each once), to unpack at the container's /."""
    names: list[str] = []
    for folder in folders:
        parts = posixpath.normpath(folder).strip("/").split("/")
        for depth in range(1, len(parts) + 1):
            name = "/".join(parts[:depth])
            if name and name not in names:
                names.append(name)
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in names:
            info = tarfile.TarInfo(name)
            info.type = tarfile.DIRTYPE
            info.mode = 0o755
            tar.addfile(info)
    return buffer.getvalue()
