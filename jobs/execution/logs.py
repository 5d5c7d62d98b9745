"""A job's log: followed from Docker into a spool file while it runs, archived when it ends.

While the container runs, each read appends only the entries Docker logged since the last one
seen (``logs(since=..., timestamps=True)``) to ``<uuid>.live`` under a file lock, so followers
polling every second never make the portal re-read a long log. When the job ends, the whole log
is archived (``<uuid>.log``, written atomically) before the container is removed, and the spool
is dropped. Byte ranges (the API's ``Range: bytes=N-``, the page's ``?offset=N``) are served from
the archive or the spool.

stderr apart from stdout: Docker keeps the two streams apart in its multiplexed log frames
(``engine.log_frames``). The log file itself stays the plain text every client expects (the
API, gpulab-cli, the download); beside it, ``<file>.stderr`` lists the byte ranges of the log
that came from stderr, one ``START END`` line per entry, so the page can mark those lines.
Logs written before this existed have no such file: all their lines show as stdout.
"""

import fcntl
import hashlib
import json
import os
from datetime import UTC, datetime
from pathlib import Path

from django.conf import settings

from clusters.runtime.errors import RuntimeFailure
from clusters.services import engine_for
from core.installation import private_dir, private_open, write_private
from jobs.models import Job
from jobs.states import ON_SLAVE

NS = 10**9


def archive_path(job: Job) -> Path:
    return Path(settings.PORTAL_LOG_ARCHIVE_DIR) / f"{job.uuid}.log"


def spool_path(job: Job) -> Path:
    return Path(settings.PORTAL_LOG_ARCHIVE_DIR) / f"{job.uuid}.live"


def stderr_path(path: Path) -> Path:
    return path.with_name(path.name + ".stderr")


def join_frames(frames: list[tuple[int, bytes]]) -> tuple[bytes, list[tuple[int, int]]]:
    """Log frames -> the text and the byte ranges in it that came from stderr (stream 2)."""
    out = bytearray()
    ranges = []
    for stream, payload in frames:
        if stream == 2 and payload:
            ranges.append((len(out), len(out) + len(payload)))
        out += payload
    return bytes(out), ranges


def _ranges_text(ranges, shift: int = 0) -> bytes:
    return b"".join(f"{a + shift} {b + shift}\n".encode() for a, b in ranges)


def job_log_archive(*, job: Job, data: bytes, stderr_ranges=()) -> None:
    path = archive_path(job)
    private_dir(path.parent)  # logs are the users' own: 0700 directory, 0600 files
    if stderr_ranges:
        write_private(stderr_path(path), _ranges_text(stderr_ranges))
    write_private(path, data)  # atomic: a reader never sees half an archive
    Job.objects.filter(pk=job.pk).update(log_archived=True)
    job.log_archived = True
    spool = spool_path(job)
    for leftover in (spool, spool.with_suffix(".state"), stderr_path(spool)):
        leftover.unlink(missing_ok=True)


def job_log_archive_frames(*, job: Job, frames: list[tuple[int, bytes]]) -> None:
    """Archive the whole log from its frames (stdout and stderr kept apart)."""
    data, ranges = join_frames(frames)
    job_log_archive(job=job, data=data, stderr_ranges=ranges)


def stamp_ns(stamp: bytes) -> int:
    """Docker's ``2026-11-21T22:15:44.338364694Z`` as integer nanoseconds since the epoch."""
    text = stamp.decode().rstrip("Z")
    whole, _, fraction = text.partition(".")
    seconds = int(datetime.fromisoformat(whole).replace(tzinfo=UTC).timestamp())
    return seconds * NS + int((fraction + "000000000")[:9])


# Docker stamps an entry when its stream's copier reads it, but copies stdout and stderr apart:
# an entry can reach the log after a later-stamped entry of the other stream (seen: "err-3"
# filed after "line-3" although stamped before it). A follower asking only for what came after
# the last time it took would lose it. So each read asks again for the last LATE_NS and takes
# the entries it has not taken yet, known by (time, stream, text).
LATE_NS = 2 * NS


def log_cursor(state: dict | None = None) -> dict:
    """Where a follower stands: the latest time taken and the entries taken within LATE_NS of
    it (key -> how many times: entries may repeat)."""
    state = state or {}
    return {"last_ns": int(state.get("last_ns", 0)), "taken": dict(state.get("taken") or {})}


def _entry_key(moment: int, stream: int, text: bytes) -> str:
    return f"{moment} {stream} {hashlib.blake2b(text, digest_size=8).hexdigest()}"


def log_since(cursor: dict) -> float | None:
    """Docker's ``since`` (seconds) for the next read: LATE_NS before the latest entry taken,
    and 1 ms more, since a float of ~1.7e9 s resolves only ~0.2 us."""
    last = cursor["last_ns"]
    return (last - LATE_NS) / NS - 0.001 if last else None


def new_frames(
    frames: list[tuple[int, bytes]], cursor: dict
) -> tuple[bytes, list[tuple[int, int]]]:
    """The text of the timestamped frames' entries not taken yet, and the ranges of it from
    stderr; ``cursor`` (``log_cursor``) is updated."""
    out = bytearray()
    ranges = []
    floor = cursor["last_ns"] - LATE_NS
    taken = cursor["taken"]
    seen: dict[str, int] = {}
    for stream, payload in frames:
        start = len(out)
        for line in payload.split(b"\n")[:-1]:
            stamp, _, text = line.partition(b" ")
            moment = stamp_ns(stamp)
            if moment <= floor:
                continue  # before the window asked for again: taken (or passed) long ago
            key = _entry_key(moment, stream, text)
            seen[key] = seen.get(key, 0) + 1
            if seen[key] <= taken.get(key, 0):
                continue
            taken[key] = taken.get(key, 0) + 1
            cursor["last_ns"] = max(cursor["last_ns"], moment)
            out += text + b"\n"
        if stream == 2 and len(out) > start:
            ranges.append((start, len(out)))
    floor = cursor["last_ns"] - LATE_NS
    cursor["taken"] = {k: n for k, n in taken.items() if int(k.split(" ", 1)[0]) > floor}
    return bytes(out), ranges


def new_entries(data: bytes, cursor: dict) -> bytes:
    """``new_frames`` of one stdout payload."""
    return new_frames([(1, data)], cursor)[0]


def _spool_refresh(job: Job) -> None:
    path = spool_path(job)
    private_dir(path.parent)
    state_path = path.with_suffix(".state")
    with os.fdopen(private_open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND), "ab") as spool:
        fcntl.flock(spool, fcntl.LOCK_EX)  # concurrent readers must not append twice
        if archive_path(job).exists():
            # The job ended while we waited: the archive replaces the spool we just reopened.
            path.unlink(missing_ok=True)
            return
        # A spool state from before LATE_NS (no "taken") re-takes at most its last LATE_NS
        # once; the archive, written when the job ends, is whole either way.
        cursor = log_cursor(json.loads(state_path.read_text()) if state_path.exists() else None)
        assert job.slave is not None  # called for a job on a slave only
        try:
            with engine_for(job.slave) as engine:
                frames = engine.log_frames(
                    job.container_id, since=log_since(cursor), timestamps=True
                )
        except RuntimeFailure:
            return  # the slave is unreachable now: serve what the spool has
        text, ranges = new_frames(frames, cursor)
        if text:
            start = spool.seek(0, os.SEEK_END)
            if ranges:
                # Before the text: a reader never sees stderr text without its marker.
                with os.fdopen(
                    private_open(stderr_path(path), os.O_WRONLY | os.O_CREAT | os.O_APPEND), "ab"
                ) as marks:
                    marks.write(_ranges_text(ranges, start))
            spool.write(text)
            spool.flush()
            write_private(state_path, json.dumps(cursor).encode())


def _read_from(path: Path, start: int) -> tuple[bytes, int]:
    with path.open("rb") as source:
        total = source.seek(0, 2)
        source.seek(min(max(start, 0), total))
        return source.read(), total


def job_log_range(job: Job, start: int) -> tuple[bytes, int]:
    """Bytes from ``start`` on, and the total length known now."""
    data, total, _path = _log_range(job, start)
    return data, total


def job_log_range_marked(job: Job, start: int) -> tuple[bytes, int, list[tuple[int, int]]]:
    """``job_log_range`` and the stderr ranges within the answered bytes (relative to them)."""
    data, total, path = _log_range(job, start)
    if path is None or not data:
        return data, total, []
    first = min(max(start, 0), total)
    last = first + len(data)
    ranges = []
    try:
        lines = stderr_path(path).read_bytes().splitlines()
    except FileNotFoundError:
        lines = []
    for line in lines:
        text_a, _, text_b = line.partition(b" ")
        a, b = max(int(text_a), first), min(int(text_b), last)
        if a < b:
            ranges.append((a - first, b - first))
    return data, total, ranges


def _log_range(job: Job, start: int) -> tuple[bytes, int, Path | None]:
    archive = archive_path(job)
    if not archive.exists() and job.container_id and job.slave_id and job.status in ON_SLAVE:
        _spool_refresh(job)
    # The archive first: the job may have ended (and its spool gone) during the refresh.
    for path in (archive, spool_path(job)):
        try:
            data, total = _read_from(path, start)
        except FileNotFoundError:
            continue
        return data, total, path
    return b"", 0, None


def job_log_bytes(job: Job) -> bytes:
    """The whole log so far; empty when the job never ran or its slave is unreachable."""
    return job_log_range(job, 0)[0]
