"""Tapis' output and share operations over the portal's outputs and shares services: shapes
against Tapis' schemas, the ended-job rule, escapes refused, read-only shares that revoke."""

import io
import zipfile

import pytest

from jobs.execution.outputs import job_archive_outputs_dir
from jobs.models import Job
from tapis.submit import tapis_job_submit
from tests.tapis.conftest import TAPIS, seed_request
from tests.tapis.openapi_facts import check, operation


@pytest.fixture
def finished(app, member, settings, tmp_path):
    """A job from the app that ended, with its archived outputs."""
    settings.PORTAL_JOB_ARCHIVE_DIR = tmp_path / "archive"
    job = tapis_job_submit(user=member, request=seed_request())
    folder = job_archive_outputs_dir(job)
    (folder / "results").mkdir(parents=True)
    (folder / "tapisjob.out").write_bytes(b"score = 0.97471\n")
    (folder / "results" / "a.txt").write_bytes(b"alpha\n")
    (folder / "results" / "b.csv").write_bytes(b"1,2\n")
    Job.objects.filter(pk=job.pk).update(status="FINISHED", exit_code=0)
    job.refresh_from_db()
    return job


def test_the_routes_are_tapis_operations():
    assert operation("GET", "/jobs/{jobUuid}/output/list/{outputPath}") == "getJobOutputList"
    assert operation("GET", "/jobs/{jobUuid}/output/download/{outputPath}") == (
        "getJobOutputDownload"
    )
    assert operation("POST", "/jobs/{jobUuid}/share") == "shareJob"
    assert operation("GET", "/jobs/{jobUuid}/share") == "getJobShare"
    assert operation("DELETE", "/jobs/{jobUuid}/share/{user}") == "deleteJobShare"


def test_list_and_download(finished, tapis_member):
    base = f"{TAPIS}jobs/{finished.uuid}/output/"
    listed = tapis_member.get(base + "list/").json()
    check(listed, "RespGetJobOutputList")
    assert [(f["path"], f["type"], f["size"]) for f in listed["result"]] == [
        ("results", "dir", 0),
        ("tapisjob.out", "file", 16),
    ]
    assert listed["result"][1]["url"].endswith("/output/download/tapisjob.out")
    deep = tapis_member.get(base + "list/?recurse=true").json()["result"]
    assert sorted(f["path"] for f in deep) == [
        "results",
        "results/a.txt",
        "results/b.csv",
        "tapisjob.out",
    ]
    one = tapis_member.get(base + "download/tapisjob.out")
    assert one.status_code == 200 and b"".join(one.streaming_content) == b"score = 0.97471\n"
    folder = tapis_member.get(base + "download/results/")
    archive = zipfile.ZipFile(io.BytesIO(b"".join(folder.streaming_content)))
    # Named inside the folder, as the outputs service zips a folder.
    assert {n: archive.read(n) for n in archive.namelist()} == {
        "a.txt": b"alpha\n",
        "b.csv": b"1,2\n",
    }


def test_running_jobs_and_escapes_are_refused(finished, tapis_member):
    Job.objects.filter(pk=finished.pk).update(status="RUNNING")
    base = f"{TAPIS}jobs/{finished.uuid}/output/"
    refused = tapis_member.get(base + "list/")
    assert refused.status_code == 409 and refused.json()["status"] == "error"
    assert tapis_member.get(base + "list/?allowIfRunning=true").status_code == 200
    Job.objects.filter(pk=finished.pk).update(status="FINISHED")
    escape = tapis_member.get(base + "download/results/../../etc/passwd")
    assert escape.status_code in (400, 403, 404)
    assert escape.json()["status"] == "error"
    check(escape.json(), "RespBasic")


def test_share_read_only_then_revoke(finished, tapis_member, tapis_outsider):
    job = f"{TAPIS}jobs/{finished.uuid}"
    assert tapis_outsider.get(job).status_code == 404
    shared = tapis_member.post(
        f"{job}/share", {"grantee": "bob", "jobResource": ["JOB_OUTPUT"]}, format="json"
    )
    assert shared.status_code == 200, shared.content
    check(shared.json(), "RespShareJob")
    listing = tapis_member.get(f"{job}/share").json()
    check(listing, "RespGetJobShareList")
    assert [(s["grantee"], s["jobPermission"]) for s in listing["result"]] == [("bob", "READ")]

    assert tapis_outsider.get(job).json()["result"]["uuid"] == str(finished.uuid)
    download = tapis_outsider.get(f"{job}/output/download/tapisjob.out")
    assert b"".join(download.streaming_content) == b"score = 0.97471\n"
    listed = tapis_outsider.get(TAPIS + "jobs/list?listType=SHARED_JOBS").json()["result"]
    assert [j["uuid"] for j in listed] == [str(finished.uuid)]
    assert tapis_outsider.post(f"{job}/cancel").status_code == 403  # read-only

    revoked = tapis_member.delete(f"{job}/share/bob")
    assert revoked.status_code == 200
    check(revoked.json(), "RespUnShareJob")
    assert tapis_outsider.get(job).status_code == 404
    assert tapis_outsider.get(f"{job}/output/download/tapisjob.out").status_code == 404


def test_bad_shares_name_the_field(finished, tapis_member):
    answer = tapis_member.post(
        f"{TAPIS}jobs/{finished.uuid}/share",
        {"grantee": "nobody", "jobPermission": "WRITE", "extra": 1},
        format="json",
    )
    assert answer.status_code == 400
    errors = answer.json()["result"]["errors"]
    assert "extra: unknown field" in errors
    assert "jobPermission: must be READ (shares are read-only)" in errors
