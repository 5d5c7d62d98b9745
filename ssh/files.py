"""SFTP (and through asyncssh, both scp protocols) on the files of a job's container.

Images need not ship ``sftp-server`` or ``scp``. Reads go through Docker's archive API (a
file's bytes are fetched whole when opened), stat through the same API's path stat. Writes are
kept until the file is closed, then written whole by ``docker exec`` of ``head -c SIZE > FILE``
(``cat`` where the image has no ``head``) as the container's user: a new file is then made by
the kernel exactly as the job's shell makes one (its owner the container's user, its group the
folder's in a setgid folder such as the job's ``/project``, else the user's own), and a file
that exists is rewritten in place, keeping its owner, group and mode. (Docker's archive API
would give every file the container user's own group: ``/project``'s files would lose the
project's.) The few directory operations (list, mkdir, remove, rename, chmod) run the usual
POSIX tools (``ls``, ``mkdir``, ``rm``, ``rmdir``, ``mv``, ``chmod``) the same way. Files on a
tmpfs inside the container are not visible to Docker's archive API.
"""

from __future__ import annotations

import io
import os
import posixpath
import shutil
import stat
import tarfile
import tempfile
import time

import asyncssh
from asyncssh.sftp import (
    FXF_APPEND,
    FXF_CREAT,
    FXF_EXCL,
    FXF_TRUNC,
    FXF_WRITE,
)

from ssh.sessions import READ_SIZE, Demux, exec_exit_status

SPOOL_BYTES = 8 * 1024 * 1024
MAX_LINKS = 8


class _IterReader(io.RawIOBase):
    """A file over an iterator of byte chunks (Docker's archive stream) for tarfile."""

    def __init__(self, chunks):
        self._chunks = iter(chunks)
        self._rest = b""

    def readable(self):
        return True

    def readinto(self, buffer):
        while not self._rest:
            try:
                self._rest = next(self._chunks)
            except StopIteration:
                return 0
        size = min(len(buffer), len(self._rest))
        buffer[:size] = self._rest[:size]
        self._rest = self._rest[size:]
        return size


class _Handle:
    def __init__(self, path: str, spool, *, writable: bool, mode: int):
        self.path = path
        self.spool = spool
        self.writable = writable
        self.mode = mode
        self.dirty = False
        self.append = False
        self.chmod: int | None = None  # permissions the client set (else the shell's own)


def _fetch_into(engine, container_id: str, path: str, spool) -> None:
    chunks = engine.archive_get(container_id, path)
    with tarfile.open(fileobj=io.BufferedReader(_IterReader(chunks)), mode="r|") as tar:
        for member in tar:
            if not member.isfile():
                raise asyncssh.SFTPFailure(f"{path} is not a regular file")
            source = tar.extractfile(member)
            assert source is not None  # a regular file always has its data
            shutil.copyfileobj(source, spool)
            break
    spool.seek(0)


# Write stdin to "$1" as the job's shell would ("$3" bytes: the end of input cannot be sent
# on a TLS engine connection), then give it mode "$2" when the client asked for one.
WRITE_SCRIPT = """
if command -v head >/dev/null 2>&1; then head -c "$3"; else cat; fi > "$1" || exit
if [ -n "$2" ]; then chmod "$2" "$1"; fi
"""


def _stat_result(mode: int, size: int, mtime: int) -> os.stat_result:
    nano = mtime * 1_000_000_000
    times = {"st_atime_ns": nano, "st_mtime_ns": nano, "st_ctime_ns": nano}
    return os.stat_result((mode, 0, 0, 1, 0, 0, size, mtime, mtime, mtime), times)


def _stat_of(data: dict) -> os.stat_result:
    return _stat_result(data["mode"], data["size"], data["mtime"])


class ContainerSFTPServer(asyncssh.SFTPServer):
    """asyncssh's SFTP server with the job's container as its file system."""

    def __init__(self, chan):
        super().__init__(chan)
        self._session = chan.get_connection().get_owner().session
        self._cwd: str | None = None

    # -- helpers ----------------------------------------------------------------------------

    @property
    def _container(self) -> str:
        return self._session.target.container_id

    async def _engine(self, fn):
        try:
            return await self._session.call(fn)
        except asyncssh.SFTPError:
            raise
        except Exception as error:  # noqa: BLE001 - reported to the client, never a crash
            raise asyncssh.SFTPFailure(str(error)) from None

    async def _run(self, *argv: str) -> None:
        """Run a tool in the container; its stderr becomes the SFTP error."""
        code, _out, err = await self._capture(list(argv))
        if code != 0:
            raise asyncssh.SFTPFailure(err.decode(errors="replace").strip() or f"{argv[0]} failed")

    async def _capture(self, argv: list[str], stdin=None) -> tuple[int, bytes, bytes]:
        """Run ``argv`` in the container, ``stdin`` (a file) its input: (exit code, out, err)."""
        stream = await self._session.exec_open(argv, tty=False)

        def read_all():
            data = b""
            try:
                while stdin is not None and (chunk := stdin.read(READ_SIZE)):
                    stream.write(chunk)
            except OSError:
                pass  # the command ended without reading it all: its exit code tells why
            stream.close_input()
            try:
                while chunk := stream.read():
                    data += chunk
            except OSError:
                pass
            return data

        try:
            raw = await self._session.gateway.run(read_all)
        finally:
            self._session.streams.discard(stream)
            stream.close()
        out, err = b"", b""
        for kind, chunk in Demux().feed(raw):
            if kind == 2:
                err += chunk
            else:
                out += chunk
        return await exec_exit_status(self._session, stream.exec_id), out, err

    async def _path(self, path: bytes) -> str:
        text = path.decode("utf-8", errors="surrogateescape")
        if not text.startswith("/"):
            if self._cwd is None:
                code, out, _ = await self._capture(["/bin/sh", "-c", "pwd"])
                self._cwd = out.decode().strip() if code == 0 and out.strip() else "/"
            text = posixpath.join(self._cwd, text)
        return posixpath.normpath(text).replace("//", "/")

    async def _stat_path(self, path: str, *, follow: bool) -> tuple[str, dict]:
        for _ in range(MAX_LINKS):
            data = await self._engine(lambda e, p=path: e.path_stat(self._container, p))
            if data is None:
                raise asyncssh.SFTPNoSuchFile(f"{path}: no such file")
            if not (follow and stat.S_ISLNK(data["mode"]) and data["linkTarget"]):
                return path, data
            target = data["linkTarget"]
            path = posixpath.normpath(posixpath.join(posixpath.dirname(path), target))
        raise asyncssh.SFTPFailure(f"{path}: too many levels of symbolic links")

    # -- SFTP operations --------------------------------------------------------------------

    async def realpath(self, path: bytes) -> bytes:
        return (await self._path(path)).encode("utf-8", errors="surrogateescape")

    async def stat(self, path: bytes):
        _, data = await self._stat_path(await self._path(path), follow=True)
        return _stat_of(data)

    async def lstat(self, path: bytes):
        _, data = await self._stat_path(await self._path(path), follow=False)
        return _stat_of(data)

    # fstat, read, write, close and fsetstat get the _Handle that open() returned; asyncssh's
    # base class types it as object, hence their override ignores.
    async def fstat(self, file_obj: _Handle):  # type: ignore[override]
        file_obj.spool.seek(0, os.SEEK_END)
        size = file_obj.spool.tell()
        return _stat_result(file_obj.mode, size, int(time.time()))

    async def open(self, path: bytes, pflags: int, attrs):
        target = await self._path(path)
        writable = bool(pflags & (FXF_WRITE | FXF_APPEND))
        existing = None
        try:
            target, existing = await self._stat_path(target, follow=True)
        except asyncssh.SFTPNoSuchFile:
            if not (writable and pflags & FXF_CREAT):
                raise
        if existing is not None:
            if pflags & FXF_EXCL:
                raise asyncssh.SFTPFileAlreadyExists(f"{target}: file exists")
            if stat.S_ISDIR(existing["mode"]):
                raise asyncssh.SFTPFailure(f"{target} is a directory")
        asked = attrs.permissions & 0o7777 if attrs and attrs.permissions is not None else None
        mode = stat.S_IFREG | (
            asked if asked is not None else (existing["mode"] & 0o7777 if existing else 0o644)
        )
        spool = tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES)
        handle = _Handle(target, spool, writable=writable, mode=mode)
        handle.append = bool(pflags & FXF_APPEND)
        if existing is None:
            handle.chmod = asked  # as sftp-server's open(2): the mode of a file it creates
        if existing is not None and not (writable and pflags & FXF_TRUNC):
            await self._engine(lambda e: _fetch_into(e, self._container, target, spool))
        if writable and (existing is None or pflags & FXF_TRUNC):
            handle.dirty = True  # create or truncate even if nothing is written
        return handle

    async def read(self, file_obj: _Handle, offset: int, size: int) -> bytes:  # type: ignore[override]
        file_obj.spool.seek(offset)
        return file_obj.spool.read(size)

    async def write(self, file_obj: _Handle, offset: int, data: bytes) -> int:  # type: ignore[override]
        if not file_obj.writable:
            raise asyncssh.SFTPPermissionDenied("the file was opened for reading")
        if file_obj.append:
            file_obj.spool.seek(0, os.SEEK_END)
        else:
            file_obj.spool.seek(offset)
        file_obj.spool.write(data)
        file_obj.dirty = True
        return len(data)

    async def close(self, file_obj: _Handle) -> None:  # type: ignore[override]
        try:
            if file_obj.dirty:
                await self._write_back(file_obj)
        finally:
            file_obj.spool.close()

    async def _write_back(self, handle: _Handle) -> None:
        """The file's bytes into the container, written by the job's user (WRITE_SCRIPT)."""
        spool = handle.spool
        spool.seek(0, os.SEEK_END)
        size = spool.tell()
        spool.seek(0)
        chmod = format(handle.chmod, "o") if handle.chmod is not None else ""
        argv = ["/bin/sh", "-c", WRITE_SCRIPT, "write", handle.path, chmod, str(size)]
        try:
            code, _out, err = await self._capture(argv, stdin=spool)
        except asyncssh.SFTPError:
            raise
        except Exception as error:  # noqa: BLE001 - reported to the client, never a crash
            raise asyncssh.SFTPFailure(str(error)) from None
        if code != 0:
            reason = err.decode(errors="replace").strip() or f"cannot write {handle.path}"
            raise asyncssh.SFTPFailure(reason)

    async def listdir(self, path: bytes):
        target = await self._path(path)
        code, out, err = await self._capture(["ls", "-1A", "--", target])
        if code != 0:
            raise asyncssh.SFTPNoSuchFile(err.decode(errors="replace").strip() or target)
        names = [line for line in out.split(b"\n") if line]
        return [b".", b"..", *names]

    async def mkdir(self, path: bytes, attrs) -> None:
        await self._run("mkdir", "--", await self._path(path))

    async def rmdir(self, path: bytes) -> None:
        await self._run("rmdir", "--", await self._path(path))

    async def remove(self, path: bytes) -> None:
        await self._run("rm", "--", await self._path(path))

    async def rename(self, oldpath: bytes, newpath: bytes) -> None:
        old, new = await self._path(oldpath), await self._path(newpath)
        await self._run("mv", "--", old, new)

    async def posix_rename(self, oldpath: bytes, newpath: bytes) -> None:
        await self.rename(oldpath, newpath)

    async def setstat(self, path: bytes, attrs) -> None:
        if attrs.permissions is not None:
            await self._run(
                "chmod", format(attrs.permissions & 0o7777, "o"), await self._path(path)
            )

    async def fsetstat(self, file_obj: _Handle, attrs) -> None:  # type: ignore[override]
        if attrs.permissions is not None:
            bits = attrs.permissions & 0o7777
            file_obj.mode = stat.S_IFREG | bits
            if file_obj.dirty:
                file_obj.chmod = bits  # the file is (re)written at close: chmod after that
            else:
                await self._run("chmod", format(bits, "o"), file_obj.path)

    async def readlink(self, path: bytes) -> bytes:
        _, data = await self._stat_path(await self._path(path), follow=False)
        if not data["linkTarget"]:
            raise asyncssh.SFTPFailure("not a symbolic link")
        return data["linkTarget"].encode()

    def symlink(self, oldpath: bytes, newpath: bytes) -> None:
        raise asyncssh.SFTPOpUnsupported("symbolic links cannot be made over this gateway")

    def link(self, oldpath: bytes, newpath: bytes) -> None:
        raise asyncssh.SFTPOpUnsupported("hard links cannot be made over this gateway")

    def exit(self) -> None:
        # OpenSSH's clients (scp in SFTP mode, sftp) treat a session that ends without an exit
        # status as failed: report success, as sftp-server's session would. (asyncssh's legacy
        # scp handler reports its own status.)
        if self.channel.get_subsystem() == "sftp":
            self.channel.exit(0)

    def statvfs(self, path: bytes):
        raise asyncssh.SFTPOpUnsupported("statvfs is not supported")
