"""Outputs on real Docker: the job's folders exist before it starts (writable by a non-root job
user), the container writes several files into $JOB_OUTPUT_DIR, the finish copies them out
before the container is removed, and they list and download (one file, and the folder as a
zip whose contents are compared). A link the job plants pointing outside is refused. (Webhooks
of a real job: tests/notifications/test_webhooks_e2e.py.)"""

import io
import zipfile

import pytest

from jobs.execution.outputs import job_archive_outputs_dir, job_output_response, job_outputs_list
from tests.integration.test_jobs_e2e import (  # noqa: F401 (fixtures)
    job,
    local,
    people,
    runtime,
    submit,
    wait_for,
    watcher,
)
from tests.support.runtime import wait_container_removed

pytestmark = [pytest.mark.docker, pytest.mark.django_db(transaction=True)]

WRITER = (
    "sh -c 'id -u > $JOB_OUTPUT_DIR/uid.txt; mkdir -p $JOB_OUTPUT_DIR/sub; "
    "for i in 1 2 3; do echo line-$i >> $JOB_OUTPUT_DIR/sub/lines.txt; done; "
    "head -c 100000 /dev/zero > $JOB_OUTPUT_DIR/zeros.bin; "
    "ln -s /etc/passwd $JOB_OUTPUT_DIR/escape; ln -s sub/lines.txt $JOB_OUTPUT_DIR/inside; "
    'echo in=$JOB_INPUT_DIR; test -d "$JOB_INPUT_DIR" && echo inputs-ok\''
)


@pytest.mark.parametrize("user", [None, "1234"])
def test_a_job_writes_outputs_that_list_and_download(people, local, watcher, user):  # noqa: F811
    extra = {"docker__user": user} if user else {}
    watcher()
    done = wait_for(submit(people, job(WRITER, **extra)), "FINISHED", "FAILED", timeout=60)
    assert done.status == "FINISHED", done.end_reason
    wait_container_removed(local, done)  # after the copy
    owner, _ = people
    files = {e["path"]: e for e in job_outputs_list(job=done, user=owner, recursive=True)}
    assert sorted(files) == ["inside", "sub", "sub/lines.txt", "uid.txt", "zeros.bin"]
    assert files["zeros.bin"]["size"] == 100000 and files["inside"]["type"] == "link"
    uid = (job_archive_outputs_dir(done) / "uid.txt").read_text().strip()
    assert uid == ("1234" if user else "0")
    one = job_output_response(job=done, user=owner, path="sub/lines.txt")
    assert b"".join(one.streaming_content) == b"line-1\nline-2\nline-3\n"
    zipped = job_output_response(job=done, user=owner, path="")
    with zipfile.ZipFile(io.BytesIO(b"".join(zipped.streaming_content))) as archive:
        contents = {name: archive.read(name) for name in archive.namelist()}
    assert contents == {
        "inside": b"line-1\nline-2\nline-3\n",
        "sub/lines.txt": b"line-1\nline-2\nline-3\n",
        "uid.txt": f"{uid}\n".encode(),
        "zeros.bin": bytes(100000),
    }
    warnings = list(done.events.filter(type="Warning").values_list("message", flat=True))
    assert any("outputs/escape: " in w and "refused 1 entries" in w for w in warnings), warnings
    assert list(done.events.exclude(stage="").values_list("stage", flat=True)) == ["ARCHIVING"]
