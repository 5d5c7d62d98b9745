"""stderr kept apart from stdout: the engine's log frames carry the stream, the spool and the
archive keep a ``.stderr`` file of byte ranges beside the plain log, and the page marks them."""

import struct

import pytest

from clusters.runtime.engine import split_frames
from jobs.execution.logs import archive_path, job_log_range, job_log_range_marked, stderr_path
from jobs.execution.runs import job_finish_run
from jobs.web.views.log import segments
from tests.support.runtime import job_doc, submit
from tests.support.scripted_engine import Behaviour, err

pytestmark = pytest.mark.django_db

WRITES_BOTH = "sh -c 'echo out-1; echo err-1 >&2; echo out-2; sleep 300'"
COMMANDS = {WRITES_BOTH: Behaviour(output=["out-1", err("err-1"), "out-2"], runs_for=300)}


def frame(stream: int, data: bytes) -> bytes:
    return struct.pack(">BxxxI", stream, len(data)) + data


def test_split_frames_reads_dockers_multiplexed_stream():
    data = frame(1, b"out\n") + frame(2, b"err\n") + frame(1, b"")
    assert split_frames(data) == [(1, b"out\n"), (2, b"err\n"), (1, b"")]
    assert split_frames(b"plain tty output\n") == [(1, b"plain tty output\n")]  # no frames


def test_stderr_lines_are_marked_while_running_and_after_the_end(
    people, slave, engine, scripted_engines
):
    scripted_engines.script(COMMANDS)
    job = submit(people, job_doc(WRITES_BOTH))
    job.refresh_from_db()
    assert job.status == "RUNNING"
    data, total, ranges = job_log_range_marked(job, 0)
    assert data == b"out-1\nerr-1\nout-2\n" and total == len(data)
    assert [data[a:b] for a, b in ranges] == [b"err-1\n"]
    # The plain log (API, gpulab-cli, download) has no markers in it.
    assert job_log_range(job, 0) == (data, total)
    # A range read from an offset gets ranges relative to the answered bytes.
    _, _, tail_ranges = job_log_range_marked(job, 6)
    assert tail_ranges == [(0, 6)]
    engine.write_log(job.container_id, "late-err\n", stream=2)
    data, _, ranges = job_log_range_marked(job, 0)
    assert [data[a:b] for a, b in ranges] == [b"err-1\n", b"late-err\n"]

    engine.finish(job.container_id, 0)
    job_finish_run(job_id=job.pk)
    job.refresh_from_db()
    assert job.log_archived and stderr_path(archive_path(job)).exists()
    data, _, ranges = job_log_range_marked(job, 0)
    assert data == b"out-1\nerr-1\nout-2\nlate-err\n"
    assert [data[a:b] for a, b in ranges] == [b"err-1\n", b"late-err\n"]
    runs = segments(data, ranges)
    assert runs == [
        {"text": "out-1\n", "err": False},
        {"text": "err-1\n", "err": True},
        {"text": "out-2\n", "err": False},
        {"text": "late-err\n", "err": True},
    ]
