"""A job's log: read live from Docker while the container exists, from the archive after.

The archive is a plain file per job under PORTAL_LOG_ARCHIVE_DIR, written before the container
is removed; byte ranges (the API's ``Range: bytes=N-``) are served from either source.
"""

from pathlib import Path

from django.conf import settings

from jobs.models import Job


def archive_path(job: Job) -> Path:
    return Path(settings.PORTAL_LOG_ARCHIVE_DIR) / f"{job.uuid}.log"


def job_log_archive(*, job: Job, data: bytes) -> None:
    path = archive_path(job)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(data)
    tmp.replace(path)  # atomic: a reader never sees half an archive
    Job.objects.filter(pk=job.pk).update(log_archived=True)
    job.log_archived = True


def job_log_bytes(job: Job) -> bytes:
    """The whole log so far; empty when the job never ran or its slave is unreachable."""
    path = archive_path(job)
    if path.exists():
        return path.read_bytes()
    if not job.container_id or job.slave_id is None:
        return b""
    from clusters.runtime.errors import RuntimeFailure
    from clusters.services import engine_for

    try:
        engine = engine_for(job.slave)
        try:
            return engine.logs(job.container_id)
        finally:
            engine.close()
    except RuntimeFailure:
        return b""


def job_log_range(job: Job, start: int) -> tuple[bytes, int]:
    """Bytes from ``start`` on, and the total length known now.

    An archived log is read from the offset on (followers poll every second or two). A live
    log comes whole from Docker, whose API offers timestamps and tails, not byte offsets.
    """
    path = archive_path(job)
    try:
        with path.open("rb") as archive:
            total = archive.seek(0, 2)
            archive.seek(min(max(start, 0), total))
            return archive.read(), total
    except FileNotFoundError:
        data = job_log_bytes(job)
        return data[start:], len(data)
