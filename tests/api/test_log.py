"""The log range protocol the gpulab-cli follows with ``log -f`` (docs/gpulab-format.md,
section 4): it sends the END of the last ``Content-Range: bytes A-END/TOTAL`` as its next ``Range:
bytes=N-``; no new data is 204; any status >= 400 (416 included) would end the client."""

import re

import pytest

from jobs.execution.logs import job_log_archive
from tests.api.conftest import API

pytestmark = pytest.mark.django_db

CONTENT_RANGE = re.compile(r"^bytes (\d+)-(\d+)/(\d+)$")


def _log(client, job, start=None):
    headers = {} if start is None else {"HTTP_RANGE": f"bytes={start}-"}
    return client.get(f"{API}jobs/{job.uuid}/log", **headers)


def _follow(client, job, start):
    """One -f poll: (status, body, next start)."""
    response = _log(client, job, start)
    assert response.status_code < 400
    if response.status_code == 204:
        return 204, b"", start
    first, end, total = map(int, CONTENT_RANGE.match(response["Content-Range"]).groups())
    assert first == start
    assert end == start + len(response.content)  # END = where the next read starts
    assert total >= end
    return response.status_code, response.content, end


def test_whole_log_without_range(member_client, running_job):
    job_log_archive(job=running_job, data=b"hello\nworld\n")
    response = _log(member_client, running_job)
    assert response.status_code == 200
    assert response.content == b"hello\nworld\n"
    assert response["Content-Type"].startswith("text/plain")
    assert "Content-Range" not in response
    # without Content-Range the client continues from Content-Length
    assert response["Content-Length"] == "12"


def test_first_read_then_follow_up_then_nothing_new(member_client, running_job):
    job_log_archive(job=running_job, data=b"line 1\n")
    status, data, nxt = _follow(member_client, running_job, 0)
    assert (status, data, nxt) == (206, b"line 1\n", 7)

    status, data, nxt2 = _follow(member_client, running_job, nxt)
    assert (status, data, nxt2) == (204, b"", 7)

    job_log_archive(job=running_job, data=b"line 1\nline 2\n")  # the job wrote more
    status, data, nxt3 = _follow(member_client, running_job, nxt2)
    assert (status, data) == (206, b"line 2\n")
    response = _log(member_client, running_job, 7)
    assert response["Content-Range"] == "bytes 7-14/14"
    assert nxt3 == 14

    status, _, _ = _follow(member_client, running_job, nxt3)
    assert status == 204


def test_follow_reassembles_the_whole_log(member_client, running_job):
    written = b""
    seen = b""
    start = 0
    for chunk in (b"a" * 10, b"", b"b\xc3\xa9\n", b"c" * 1000, b""):
        written += chunk
        job_log_archive(job=running_job, data=written)
        _, data, start = _follow(member_client, running_job, start)
        seen += data
    assert seen == written


@pytest.mark.parametrize("start", [0, 5, 10**12])
def test_never_416_for_empty_or_short_logs(member_client, submit, start):
    job = submit()  # never ran: empty log
    assert _log(member_client, job, start).status_code == 204
    job_log_archive(job=job, data=b"12345")
    answer = _log(member_client, job, start)
    assert answer.status_code == (206 if start < 5 else 204)


def test_empty_log_without_range_is_an_empty_200(member_client, submit):
    """gpulab-cli without -f repeats its request until it gets 200 or 206: never 204 here."""
    response = _log(member_client, submit())
    assert response.status_code == 200
    assert response.content == b""
    assert response["Content-Length"] == "0"


@pytest.mark.parametrize("header", ["bytes=abc-", "items=0-", "bytes=-5", "bytes=5-2", "garbage"])
def test_unusable_range_is_ignored_not_an_error(member_client, running_job, header):
    job_log_archive(job=running_job, data=b"hello")
    response = member_client.get(f"{API}jobs/{running_job.uuid}/log", HTTP_RANGE=header)
    assert response.status_code == 200
    assert response.content == b"hello"


def test_closed_range(member_client, running_job):
    job_log_archive(job=running_job, data=b"0123456789")
    response = member_client.get(f"{API}jobs/{running_job.uuid}/log", HTTP_RANGE="bytes=2-4")
    assert response.status_code == 206
    assert response.content == b"234"
    assert response["Content-Range"] == "bytes 2-5/10"


def test_log_accepts_plain_text_clients(member_client, running_job):
    job_log_archive(job=running_job, data=b"x")
    response = member_client.get(f"{API}jobs/{running_job.uuid}/log", HTTP_ACCEPT="text/plain")
    assert response.status_code == 200


def test_log_is_for_members_only(outsider_client, anon_client, admin_client, running_job):
    job_log_archive(job=running_job, data=b"secret output")
    assert _log(outsider_client, running_job).status_code == 403
    assert _log(anon_client, running_job).status_code == 401
    assert _log(admin_client, running_job).status_code == 200
