"""The job log on the job page: the tail at page load, then new bytes polled by htmx
(``?offset=N`` answers the bytes from N on and the next offset), and the raw text."""

import re
from datetime import timedelta

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse, HttpResponseForbidden
from django.shortcuts import render
from django.utils import timezone

from jobs.execution.logs import job_log_range, job_log_range_marked
from jobs.models import Job
from jobs.selectors import job_sees_full
from jobs.states import ACTIVE, ON_SLAVE, PENDING, JobStatus
from jobs.web.views.common import visible_job

# The page shows at most this much of a log at load; the raw link has all of it.
INITIAL_TAIL_BYTES = 256 * 1024
# One poll answers at most this much; the next poll continues.
CHUNK_BYTES = 256 * 1024
_ANSI = re.compile(rb"\x1b\[[0-9;?]*[ -/]*[@-~]")


def complete_utf8_length(data: bytes) -> int:
    """Length of the longest prefix of ``data`` that does not end inside a UTF-8 character."""
    end = len(data)
    for back in range(1, min(4, end) + 1):
        byte = data[end - back]
        if byte & 0b1100_0000 == 0b1000_0000:
            continue  # a continuation byte: look further back for the lead byte
        if byte & 0b1000_0000 == 0:
            return end  # ASCII: complete
        need = 2 if byte >> 5 == 0b110 else 3 if byte >> 4 == 0b1110 else 4
        return end if back >= need else end - back
    return end


def as_text(data: bytes) -> str:
    return _ANSI.sub(b"", data).decode("utf-8", errors="replace")


# Until these end, the log may begin any moment (a release from elsewhere ends ONHOLD): polled
# twice a second, which costs a query while nothing is on a slave.
STARTS_SOON = frozenset(
    {JobStatus.ONHOLD, JobStatus.QUEUED, JobStatus.ASSIGNED, JobStatus.STARTING}
)

JUST_STARTED = timedelta(seconds=10)

# After a job ends, keep polling this long for the archive that holds the log's last bytes.
ARCHIVE_WAIT = timedelta(minutes=2)


def poll_interval(job: Job, *, now=None) -> str | None:
    """How often the log is polled: often while queued or on a slave, and after the end only
    until the log is archived (briefly)."""
    if job.status not in ACTIVE:
        now = now or timezone.now()
        waiting = job.container_id and not job.log_archived
        if waiting and job.status_updated and now - job.status_updated < ARCHIVE_WAIT:
            return "3s"
        return None
    # While queued, often: the first lines show within a second of RUNNING (the state itself is
    # polled every second by the page's live part).
    if job.status in STARTS_SOON:
        return "500ms"
    now = now or timezone.now()
    if job.started_at and now - job.started_at < JUST_STARTED:
        return "500ms"  # the first lines show within a second of RUNNING
    return "1s"


def log_state(job: Job) -> str:
    """The log header's words: live, waiting for the start, archived or ended."""
    if job.status in ON_SLAVE:
        return "live"
    if job.status in PENDING:
        return "starts when the job runs"
    if job.log_archived:
        return "archived"
    return "ended" if job.container_id else ""


def segments(data: bytes, ranges: list[tuple[int, int]]) -> list[dict]:
    """The text cut into runs of stdout and stderr (``ranges``: stderr bytes of ``data``), each
    as page text: ``[{"text": ..., "err": bool}]``."""
    runs, at = [], 0
    for a, b in sorted(ranges):
        a, b = max(a, at), min(b, len(data))
        if a >= b:
            continue
        if a > at:
            runs.append({"text": as_text(data[at:a]), "err": False})
        runs.append({"text": as_text(data[a:b]), "err": True})
        at = b
    if at < len(data):
        runs.append({"text": as_text(data[at:]), "err": False})
    merged: list[dict] = []
    for run in runs:
        if merged and merged[-1]["err"] == run["err"]:
            merged[-1]["text"] += run["text"]
        elif run["text"]:
            merged.append(run)
    return merged


def _shift(ranges, start: int) -> list[tuple[int, int]]:
    return [(a - start, b - start) for a, b in ranges]


def initial_log(job: Job) -> dict:
    data, total, ranges = job_log_range_marked(job, 0)
    if job.status in ACTIVE:
        # Stop before a half-written character; the next poll starts there.
        keep = complete_utf8_length(data)
        total -= len(data) - keep
        data = data[:keep]
    truncated = len(data) > INITIAL_TAIL_BYTES
    if truncated:
        cut = len(data) - INITIAL_TAIL_BYTES
        newline = data.find(b"\n", cut)
        if 0 <= newline - cut < 4096:
            cut = newline + 1
        data = data[cut:]
        ranges = _shift(ranges, cut)
    return {
        "segments": segments(data, ranges),
        "has_stderr": bool(ranges),
        "text": as_text(data),
        "offset": total,
        "total": total,
        "truncated": truncated,
        "trigger": _trigger(poll_interval(job)),
        "state": log_state(job),
    }


def _trigger(interval: str | None) -> str | None:
    if interval is None:
        return None
    return f"every {interval} [document.visibilityState === 'visible']"


@login_required
def job_log(request, uuid):
    job = visible_job(request.user, uuid, related=("slave",))
    if not job_sees_full(request.user, job):
        return HttpResponseForbidden("The log is visible to members of the job's project only.")
    try:
        offset = max(0, int(request.GET.get("offset", "0")))
    except ValueError:
        offset = 0
    data, total, ranges = job_log_range_marked(job, offset)
    interval = poll_interval(job)
    more = len(data) > CHUNK_BYTES
    data = data[:CHUNK_BYTES]
    if interval or more:
        data = data[: complete_utf8_length(data)]
    next_offset = min(offset, total) + len(data)
    trigger: str | None
    if more:
        trigger = "load delay:100ms"  # the rest of a long log, right away
    else:
        trigger = _trigger(interval)
    return render(
        request,
        "jobs/_log_poll.html",
        # The last poll also updates the "live" label outside the polled part (out of band).
        {
            "job": job,
            "text": as_text(data),
            "segments": segments(data, ranges),
            "offset": next_offset,
            "trigger": trigger,
            # The header's words follow the job (out of band: outside the polled part).
            "log_state": log_state(job),
        },
    )


@login_required
def job_log_raw(request, uuid):
    job = visible_job(request.user, uuid, related=("slave",))
    if not job_sees_full(request.user, job):
        return HttpResponseForbidden("The log is visible to members of the job's project only.")
    data, _total = job_log_range(job, 0)
    response = HttpResponse(data, content_type="text/plain; charset=utf-8")
    # ?download=1: the whole log as a file (the page's Download button); else shown inline.
    how = "attachment" if request.GET.get("download") == "1" else "inline"
    response["Content-Disposition"] = f'{how}; filename="job-{job.uuid}.log"'
    return response
