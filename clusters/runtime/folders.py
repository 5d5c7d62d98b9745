"""Folders a container gets before it starts (``ContainerSpec.folders``), as one tar archive.

Docker creates nothing but the working directory, and that one belongs to root: a job running
as another user could not write its outputs. The engine unpacks this archive into the created
container so that each folder belongs to the container's user: a numeric user ("1000",
"1000:100") is written into the archive's entries; a user name is resolved by Docker itself
(its "copy UID/GID" option reads the image's /etc/passwd, as the start would).
"""

import io
import posixpath
import tarfile


def numeric_owner(user: str | None) -> tuple[int, int] | None:
    """(uid, gid) of a container user given by numbers (no user: root); None for a name."""
    if not user:
        return 0, 0
    uid, _, gid = user.partition(":")
    if uid.isdigit() and (not gid or gid.isdigit()):
        return int(uid), int(gid or 0)
    return None


def folders_tar(folders, *, owner: tuple[int, int] = (0, 0)) -> bytes:
    """A tar of empty directories (parents first, each once), to unpack at the container's /;
    the deepest folders belong to ``owner``, their parents to root."""
    names: list[str] = []
    leaves = {posixpath.normpath(f).strip("/") for f in folders}
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
            if name in leaves:
                info.uid, info.gid = owner
            tar.addfile(info)
    return buffer.getvalue()
