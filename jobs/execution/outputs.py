"""A job's outputs: copied out of its container when it ends, listed and downloaded afterwards.

Every job's container has ``/job/outputs`` (``jobs.execution.container_spec``). When the container has stopped
and before it is removed, ``job_outputs_archive`` reads that folder through the engine
(``get_archive``: works for remote engines and exited containers alike) and unpacks it into
the job's archive folder on the portal's side, safely: names that are absolute or hold ``..``,
links pointing outside the folder, devices and other special files are refused (a warning
event names them); the total size and the number of entries are capped by settings
(``PORTAL_OUTPUT_MAX_BYTES``, ``PORTAL_OUTPUT_MAX_FILES``), and the copy stops with a warning
event at the cap. Files are written 0600 in 0700 folders (the portal's user only).

Reading (list, download) is for whoever sees the job in full (``jobs.selectors.job_sees_full``:
the job's project, admins, and the people it is shared with). Paths are relative to the output
folder; one that leaves it (``..``, absolute, a link pointing outside) is refused. A folder
downloads as a zip built while it is sent (nothing of its size is held in memory); a download
larger than ``PORTAL_OUTPUT_DOWNLOAD_MAX_BYTES`` is refused. Outputs are removed
``PORTAL_OUTPUT_RETENTION_DAYS`` after the job ended (``job_outputs_purge``, a periodic task).

The archive is on the portal's side (``job_archive_dir``), so outputs stay readable after the
container and its slave are gone, for remote (``tcp://``) engines too. A job from an app also
gets Tapis' ``tapisjob.out`` there (``job_stdout_archive``): its stdout and stderr as the engine
interleaved them, written by the finish path right after the copy, so the portal's record of
them wins over a file of the same name the job wrote itself.
"""

from __future__ import annotations

import logging
import os
import posixpath
import shutil
import stat
import tarfile
import uuid
import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from django.conf import settings
from django.http import FileResponse, StreamingHttpResponse
from django.utils import timezone

from core.errors import NotAllowed, NotFound, ServiceError
from core.installation import private_dir, write_private
from core.timefmt import utc_z
from jobs.execution.container_spec import CONTAINER_OUTPUT_DIR
from jobs.models import Job, JobEvent
from jobs.selectors import job_sees_full
from jobs.transitions import Stage, job_event_add, job_stage_record

log = logging.getLogger(__name__)
FILE_MODE = 0o600
DIR_MODE = 0o700
CHUNK = 1024 * 1024
PURGE_BATCH = 500
# How many refused names a warning event lists (the rest are counted).
SHOWN_REFUSALS = 10
# Tapis' record of a job's stdout and stderr, in the archived outputs of a job from an app.
STDOUT_NAME = "tapisjob.out"


class TooLarge(ServiceError):
    status_code = 413


# --- where the archive is --------------------------------------------------------------------


def job_archive_dir(job) -> Path:
    """The job's folder in the archive (private to the portal's user)."""
    return Path(settings.PORTAL_JOB_ARCHIVE_DIR) / str(job.uuid)


def job_archive_outputs_dir(job) -> Path:
    """Where the container's output folder is copied when the job ends."""
    return job_archive_dir(job) / "outputs"


def job_stdout_archive(*, job: Job, data: bytes) -> None:
    """Write ``tapisjob.out`` (stdout and stderr as the engine interleaved them) for a job
    from an app; other jobs keep only the portal's log."""
    if not job.app_id:
        return
    folder = private_dir(job_archive_outputs_dir(job))
    write_private(folder / STDOUT_NAME, data)


# --- copying out of the container ------------------------------------------------------------


class _ChunkReader:
    """A file object over an iterator of byte chunks (the engine's tar stream)."""

    def __init__(self, chunks: Iterable[bytes]):
        self._chunks = iter(chunks)
        self._buffer = b""

    def read(self, size: int = -1) -> bytes:
        while size < 0 or len(self._buffer) < size:
            chunk = next(self._chunks, None)
            if chunk is None:
                break
            self._buffer += chunk
        if size < 0:
            data, self._buffer = self._buffer, b""
        else:
            data, self._buffer = self._buffer[:size], self._buffer[size:]
        return data


@dataclass
class ExtractResult:
    files: int = 0  # entries written (files, folders, links)
    bytes: int = 0
    refused: list[str] = field(default_factory=list)  # "name: why"
    stopped: str = ""  # why the copy stopped early (a limit), "" when it ran to the end


def _refuse_name(name: str) -> str | None:
    if name.startswith(("/", "\\")):
        return "absolute name"
    if ".." in name.split("/"):
        return "name contains '..'"
    if "\x00" in name:
        return "name contains a NUL byte"
    return None


def _inside(root: str, path: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _make_dirs(root: Path, relative: str) -> Path:
    """Create ``root/relative`` folder by folder (0700), never through a link."""
    current = root
    for part in [p for p in relative.split("/") if p]:
        current = current / part
        try:
            info = os.lstat(current)
        except FileNotFoundError:
            os.mkdir(current, DIR_MODE)
            continue
        if not stat.S_ISDIR(info.st_mode):
            raise ValueError(f"{part} is not a folder")
    return current


def outputs_extract(
    *, chunks: Iterable[bytes], top: str, dest: Path, max_bytes: int, max_files: int
) -> ExtractResult:
    """Unpack the tar stream of the container folder named ``top`` (its basename: Docker's
    archive names every entry ``top/...``) into ``dest``, refusing what could escape it."""
    result = ExtractResult()
    dest.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    os.chmod(dest, DIR_MODE)
    root = os.path.realpath(dest)
    # Stream mode ("r|") only reads: typeshed's file protocol also wants write/seek/tell.
    with tarfile.open(fileobj=_ChunkReader(chunks), mode="r|") as tar:  # type: ignore[call-overload]
        for member in tar:
            name = member.name
            if name == top or name == top + "/":
                continue  # the folder itself
            why = _refuse_name(name)
            if why is None and not name.startswith(top + "/"):
                why = "outside the output folder"
            if why:
                result.refused.append(f"{name}: {why}")
                continue
            relative = name[len(top) + 1 :].strip("/")
            if not relative:
                continue
            if result.files >= max_files:
                result.stopped = f"more than {max_files} entries (PORTAL_OUTPUT_MAX_FILES)"
                break
            if member.isfile() and result.bytes + member.size > max_bytes:
                result.stopped = f"more than {max_bytes} bytes (PORTAL_OUTPUT_MAX_BYTES)"
                break
            changes = {"name": relative, "deep": False}
            if member.islnk():  # hard links name another entry of the archive: top/...
                if not member.linkname.startswith(top + "/"):
                    result.refused.append(f"{name}: hard link to something outside")
                    continue
                changes["linkname"] = member.linkname[len(top) + 1 :]
            try:
                # The standard library's "data" filter: no absolute names, nothing outside
                # dest (after resolving links already on disk), no links out, no devices.
                member = tarfile.data_filter(member.replace(**changes), root)
                _extract_one(tar, member, dest, root, result)
            except (tarfile.FilterError, ValueError, OSError) as error:
                result.refused.append(f"{name}: {error}")
    return result


def _extract_one(tar, member: tarfile.TarInfo, dest: Path, root: str, result) -> None:
    relative = member.name
    parent = _make_dirs(dest, posixpath.dirname(relative))
    if not _inside(root, os.path.realpath(parent)):
        raise ValueError("its folder leads outside the output folder")
    target = parent / posixpath.basename(relative)
    if member.isdir():
        _make_dirs(dest, relative)
        result.files += 1
        return
    if member.issym():
        resolved = os.path.realpath(os.path.join(parent, member.linkname))
        if not _inside(root, resolved):
            raise ValueError("link points outside the output folder")
        if os.path.lexists(target):
            os.unlink(target)
        os.symlink(member.linkname, target)
        result.files += 1
        return
    if member.islnk():
        # A hard link names an entry unpacked before it: copy that file (no hard links).
        source = os.path.realpath(dest / member.linkname)
        if not _inside(root, source) or not os.path.isfile(source):
            raise ValueError("hard link to something outside the output folder")
        size = os.path.getsize(source)
        if result.bytes + size > settings.PORTAL_OUTPUT_MAX_BYTES:
            raise ValueError("over the size limit")
        with open(source, "rb") as src:
            _write(target, iter(lambda: src.read(CHUNK), b""), member.mtime)
        result.files += 1
        result.bytes += size
        return
    if not member.isfile():
        raise ValueError("not a regular file, folder or link")
    data = tar.extractfile(member)
    _write(target, iter(lambda: data.read(CHUNK), b""), member.mtime)
    result.files += 1
    result.bytes += member.size


def _write(target: Path, chunks: Iterator[bytes], mtime: float) -> None:
    if os.path.lexists(target) and not os.path.isfile(target):
        raise ValueError("exists and is not a regular file")
    # O_NOFOLLOW: never write through a link that appeared at the target.
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, FILE_MODE)
    with os.fdopen(fd, "wb") as out:
        for chunk in chunks:
            out.write(chunk)
    os.chmod(target, FILE_MODE)
    os.utime(target, (mtime, mtime))


def job_outputs_archive(*, job: Job, engine, container_id: str) -> ExtractResult | None:
    """Copy the ended container's output folder into the job's archive (ARCHIVING stage).

    Never raises: a failed copy is a warning on the job, not a reason to keep its container or
    to leave it unfinished.
    """
    job_stage_record(job=job, stage=Stage.ARCHIVING, message="copying the output folder")
    try:
        chunks = engine.get_archive(container_id, CONTAINER_OUTPUT_DIR)
        result = outputs_extract(
            chunks=chunks,
            top=posixpath.basename(CONTAINER_OUTPUT_DIR),
            dest=job_archive_outputs_dir(job),
            max_bytes=settings.PORTAL_OUTPUT_MAX_BYTES,
            max_files=settings.PORTAL_OUTPUT_MAX_FILES,
        )
    except Exception as error:  # the engine, the stream or the disk: say so and go on
        log.warning("outputs of %s not copied: %s", job.uuid, error)
        _warn(job, f"outputs not copied: {type(error).__name__}: {str(error)[:300]}")
        return None
    if result.refused:
        shown = "; ".join(result.refused[:SHOWN_REFUSALS])
        more = len(result.refused) - SHOWN_REFUSALS
        _warn(
            job,
            f"outputs: refused {len(result.refused)} entries: {shown}"
            + (f" (and {more} more)" if more > 0 else ""),
        )
    if result.stopped:
        _warn(
            job,
            f"outputs: copy stopped at {result.files} entries, {result.bytes} bytes: "
            f"{result.stopped}; the rest was not kept",
        )
    job_event_add(
        job=job, message=f"outputs archived: {result.files} entries, {result.bytes} bytes"
    )
    return result


def _warn(job: Job, message: str) -> None:
    job_event_add(job=job, message=message, type=JobEvent.Type.WARNING)


# --- reading -------------------------------------------------------------------------------


def _require_reader(job: Job, user) -> None:
    if not job_sees_full(user, job):
        raise NotAllowed("only the job's project and the people it is shared with see its outputs")


def _resolve(job: Job, path: str) -> tuple[Path, Path]:
    """(outputs root, the target inside it) for a relative ``path``; refuses escapes."""
    path = (path or "").strip()
    if path.startswith("/") or path.startswith("\\"):
        raise ServiceError("path: must be relative to the output folder")
    parts = [p for p in path.replace("\\", "/").split("/") if p not in ("", ".")]
    if ".." in parts:
        raise ServiceError("path: must not contain '..'")
    if any("\x00" in p for p in parts):
        raise ServiceError("path: must not contain NUL")
    root = job_archive_outputs_dir(job)
    if not root.is_dir():
        raise NotFound("this job has no outputs (none were written, or they were purged)")
    real_root = os.path.realpath(root)
    target = root.joinpath(*parts)
    # Containment first: a path through a link pointing out is refused whether or not
    # something exists there (no probing of the portal's disk).
    if not _inside(real_root, os.path.realpath(target)):
        raise NotAllowed("path: leads outside the job's output folder")
    if not os.path.lexists(target):
        raise NotFound(f"path: {path} does not exist")
    return root, target


def _entry(root: Path, path: Path) -> dict:
    info = os.lstat(path)
    kind = "dir" if stat.S_ISDIR(info.st_mode) else "file"
    if stat.S_ISLNK(info.st_mode):
        kind = "link"
    modified = datetime.fromtimestamp(info.st_mtime, tz=UTC)
    return {
        "path": path.relative_to(root).as_posix(),
        "size": info.st_size if kind == "file" else 0,
        "modified": utc_z(modified),
        "type": kind,
    }


def job_outputs_list(*, job: Job, user, path: str = "", recursive: bool = False) -> list[dict]:
    """The entries of the output folder ``path`` (or that one file): path, size, modified,
    type ("file", "dir" or "link"). ``recursive`` walks the folders below too (never through
    links); at most PORTAL_OUTPUT_MAX_FILES entries."""
    _require_reader(job, user)
    root, target = _resolve(job, path)
    if not target.is_dir():
        return [_entry(root, target)]
    limit = settings.PORTAL_OUTPUT_MAX_FILES
    entries: list[dict] = []
    if recursive:
        for folder, dirs, files in os.walk(target):
            dirs.sort()
            for name in sorted(dirs + files):
                entries.append(_entry(root, Path(folder) / name))
            if len(entries) >= limit:
                break
    else:
        for child in sorted(target.iterdir()):
            entries.append(_entry(root, child))
            if len(entries) >= limit:
                break
    return entries[:limit]


def _zip_members(root: Path, target: Path) -> list[tuple[Path, str]]:
    """(file on disk, name in the zip) for every file below ``target``; links are followed
    only when they resolve inside the output folder, to a file."""
    real_root = os.path.realpath(root)
    base = target if target.is_dir() else target.parent
    members = []
    if target.is_dir():
        for folder, dirs, files in os.walk(target):
            dirs.sort()
            for name in sorted(files):
                members.append(Path(folder) / name)
    else:
        members.append(target)
    result = []
    for member in members:
        real = os.path.realpath(member)
        if _inside(real_root, real) and os.path.isfile(real):
            result.append((Path(real), member.relative_to(base).as_posix()))
    return result


class _Pipe:
    """A write-only file that zipfile writes into and the response reads from."""

    def __init__(self) -> None:
        self.chunks: list[bytes] = []
        self.position = 0
        self.buffered = 0

    def write(self, data: bytes) -> int:
        self.chunks.append(bytes(data))
        self.position += len(data)
        self.buffered += len(data)
        return len(data)

    def tell(self) -> int:
        return self.position

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass  # zipfile never closes a file it was handed; here for the file protocol

    def drain(self) -> bytes:
        data = b"".join(self.chunks)
        self.chunks.clear()
        self.buffered = 0
        return data


def zip_stream(members: list[tuple[Path, str]]) -> Iterator[bytes]:
    """The zip of ``members`` (file, name), produced chunk by chunk as it is sent."""
    pipe = _Pipe()
    # An unseekable output: zipfile writes data descriptors after each member.
    with zipfile.ZipFile(pipe, mode="w", compression=zipfile.ZIP_DEFLATED) as archive:
        for source, name in members:
            info = zipfile.ZipInfo.from_file(source, arcname=name)
            info.compress_type = zipfile.ZIP_DEFLATED
            with open(source, "rb") as src, archive.open(info, mode="w", force_zip64=True) as out:
                while chunk := src.read(CHUNK):
                    out.write(chunk)
                    if pipe.buffered >= CHUNK:
                        yield pipe.drain()
            yield pipe.drain()
    yield pipe.drain()


def job_output_response(*, job: Job, user, path: str, as_zip: bool = False):
    """One file as an attachment, or a folder (or a file with ``as_zip``) as a streamed zip."""
    _require_reader(job, user)
    root, target = _resolve(job, path)
    limit = settings.PORTAL_OUTPUT_DOWNLOAD_MAX_BYTES
    if target.is_dir() or as_zip:
        members = _zip_members(root, target)
        total = sum(source.stat().st_size for source, _ in members)
        if total > limit:
            raise TooLarge(
                f"path: {total} bytes to zip, more than this site's download limit ({limit})"
            )
        stem = target.name if target != root else f"{job.uuid}-outputs"
        response = StreamingHttpResponse(zip_stream(members), content_type="application/zip")
        response["Content-Disposition"] = f'attachment; filename="{_safe_name(stem)}.zip"'
        return response
    if not os.path.isfile(os.path.realpath(target)):
        raise ServiceError("path: not a file or folder")
    size = os.path.getsize(os.path.realpath(target))
    if size > limit:
        raise TooLarge(f"path: {size} bytes, more than this site's download limit ({limit})")
    return FileResponse(
        open(os.path.realpath(target), "rb"),  # noqa: SIM115 (FileResponse closes it)
        as_attachment=True,
        filename=target.name,
    )


def _safe_name(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)[:100] or "outputs"


# --- retention -----------------------------------------------------------------------------


def job_outputs_purge(*, now: datetime | None = None) -> int:
    """Remove the archived outputs of jobs that ended more than PORTAL_OUTPUT_RETENTION_DAYS
    ago (0 keeps them forever); returns how many jobs' outputs were removed. Walks the archive
    folder (only jobs with outputs), a bounded batch per run."""
    days = settings.PORTAL_OUTPUT_RETENTION_DAYS
    base = Path(settings.PORTAL_JOB_ARCHIVE_DIR)
    if days <= 0 or not base.is_dir():
        return 0
    cutoff = (now or timezone.now()) - timedelta(days=days)
    names = []
    for entry in os.scandir(base):
        if entry.is_dir(follow_symlinks=False) and os.path.isdir(Path(entry.path) / "outputs"):
            names.append(entry.name)
        if len(names) >= PURGE_BATCH * 4:
            break
    uuids = set()
    for name in names:
        try:
            uuids.add(str(uuid.UUID(name)))
        except ValueError:
            continue
    removed = 0
    jobs = Job.objects.filter(uuid__in=uuids, ended_at__lt=cutoff).only("id", "uuid")
    for job in jobs[:PURGE_BATCH]:
        shutil.rmtree(job_archive_outputs_dir(job), ignore_errors=True)
        job_event_add(job=job, message=f"outputs removed after {days} days (site retention)")
        removed += 1
    return removed
