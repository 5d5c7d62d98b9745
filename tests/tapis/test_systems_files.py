"""Tapis' Systems and Files, read-only (issue 27, Tapis item 8): clusters as execution systems
(execSystemId names one), the archive of job outputs as portal-archive, listed and read only
where the job selectors let the caller see a job (shares included), never outside a job's
folder. Answers checked against Tapis' Systems and Files schemas; tapipy drives them in
test_tapipy.py."""

import io
import os
import zipfile

import pytest

from jobs.execution.outputs import job_archive_outputs_dir
from jobs.models import Job
from jobs.user_actions.shares import job_share_create
from tapis.submit import tapis_job_submit
from tests.tapis.conftest import TAPIS, seed_request
from tests.tapis.openapi_facts import SYSTEMS_FILES, check

OPS = TAPIS + "files/ops/portal-archive/"
CONTENT = TAPIS + "files/content/portal-archive/"


def test_clusters_are_execution_systems(app, tapis_member, member):
    listed = tapis_member.get(TAPIS + "systems")
    assert listed.status_code == 200, listed.content
    check(listed.json(), "RespSystems", schemas=SYSTEMS_FILES)
    assert [s["id"] for s in listed.json()["result"]] == ["1", "portal-archive"]

    one = tapis_member.get(TAPIS + "systems/1").json()
    check(one, "RespSystem", schemas=SYSTEMS_FILES)
    system = one["result"]
    assert (system["canExec"], system["systemType"], system["enabled"]) == (True, "LINUX", True)
    assert system["description"] == "test cluster"
    capabilities = {c["name"]: c["value"] for c in system["jobCapabilities"]}
    assert capabilities["gpus"] == "4" and capabilities["cpus"] == "16"
    assert [s["name"] for s in system["notes"]["slaves"]] == ["gpu1"]
    archive = tapis_member.get(TAPIS + "systems/portal-archive").json()["result"]
    assert (archive["canExec"], archive["rootDir"]) == (False, "/")
    assert tapis_member.get(TAPIS + "systems/9").status_code == 404
    assert tapis_member.get(TAPIS + "systems/%C2%B2").status_code == 404  # "²": no cluster id

    # A job names its execution system by that id, and the Systems view finds it.
    job = tapis_job_submit(user=member, request=seed_request(execSystemId="1"))
    exec_system = tapis_member.get(f"{TAPIS}jobs/{job.uuid}").json()["result"]["execSystemId"]
    assert tapis_member.get(f"{TAPIS}systems/{exec_system}").json()["result"]["id"] == "1"


@pytest.fixture
def ended(app, member):
    """alice's finished job with outputs: tapisjob.out, sub/a.txt and a link out of the
    folder."""
    job = tapis_job_submit(user=member, request=seed_request())
    Job.objects.filter(pk=job.pk).update(status="FINISHED")
    outputs = job_archive_outputs_dir(job)
    (outputs / "sub").mkdir(parents=True)
    (outputs / "tapisjob.out").write_text("score = 0.97\n")
    (outputs / "sub" / "a.txt").write_text("a\n")
    os.symlink("/etc/hostname", outputs / "escape")
    return job


def test_list_the_archive(ended, tapis_member, tapis_outsider):
    uuid = str(ended.uuid)
    top = tapis_member.get(OPS).json()
    check(top, "FileListingResponse", schemas=SYSTEMS_FILES)
    assert [(f["name"], f["type"]) for f in top["result"]] == [("jobs", "dir")]
    assert [f["name"] for f in tapis_member.get(OPS + "jobs").json()["result"]] == [uuid]
    assert tapis_outsider.get(OPS + "jobs").json()["result"] == []
    assert [f["path"] for f in tapis_member.get(f"{OPS}jobs/{uuid}").json()["result"]] == [
        f"jobs/{uuid}/outputs"
    ]
    listed = tapis_member.get(f"{OPS}jobs/{uuid}/outputs/").json()
    check(listed, "FileListingResponse", schemas=SYSTEMS_FILES)
    entries = {f["name"]: f for f in listed["result"]}
    assert set(entries) == {"escape", "sub", "tapisjob.out"}
    out = entries["tapisjob.out"]
    assert (out["path"], out["size"], out["type"]) == (
        f"jobs/{uuid}/outputs/tapisjob.out",
        13,
        "file",
    )
    assert out["url"].endswith(
        f"/api/tapis/v3/files/content/portal-archive/jobs/{uuid}/outputs/tapisjob.out"
    )
    deep = tapis_member.get(f"{OPS}jobs/{uuid}/outputs", {"recurse": "true", "pattern": "*.txt"})
    assert [f["path"] for f in deep.json()["result"]] == [f"jobs/{uuid}/outputs/sub/a.txt"]
    paged = tapis_member.get(f"{OPS}jobs/{uuid}/outputs", {"limit": 1, "offset": 1})
    assert [f["name"] for f in paged.json()["result"]] == ["sub"]

    # Nothing but the archive, nothing outside a job's folder, nothing of others' jobs.
    assert tapis_member.get(TAPIS + "files/ops/1/").status_code == 404
    assert tapis_member.get(f"{OPS}jobs/{uuid}/../{uuid}").status_code == 400
    assert tapis_member.get(f"{OPS}elsewhere").status_code == 404
    assert tapis_outsider.get(f"{OPS}jobs/{uuid}/outputs").status_code == 404
    assert tapis_member.get(OPS, {"pattern": "regex:.*"}).status_code == 400


def test_read_files_of_the_archive(ended, tapis_member, tapis_outsider, member, outsider):
    uuid = str(ended.uuid)
    got = tapis_member.get(f"{CONTENT}jobs/{uuid}/outputs/tapisjob.out")
    assert got.status_code == 200
    assert got["Content-Type"] == "application/octet-stream"
    assert b"".join(got.streaming_content) == b"score = 0.97\n"
    folder = tapis_member.get(f"{CONTENT}jobs/{uuid}/outputs/sub")
    assert folder["Content-Type"] == "application/zip"
    with zipfile.ZipFile(io.BytesIO(b"".join(folder.streaming_content))) as archive:
        assert archive.namelist() == ["a.txt"]

    assert tapis_member.get(f"{CONTENT}jobs/{uuid}/outputs/escape").status_code == 403
    assert tapis_member.get(f"{CONTENT}jobs/{uuid}/outputs/../../x").status_code == 400
    assert tapis_member.get(f"{CONTENT}jobs/{uuid}").status_code == 400
    assert tapis_member.get(f"{CONTENT}jobs/{uuid}/outputs/none").status_code == 404
    assert tapis_outsider.get(f"{CONTENT}jobs/{uuid}/outputs/tapisjob.out").status_code == 404

    # Shared with the outsider: listed and readable, as everywhere else.
    job_share_create(job=ended, user=member, grantee_user=outsider)
    assert [f["name"] for f in tapis_outsider.get(OPS + "jobs").json()["result"]] == [uuid]
    shared = tapis_outsider.get(f"{CONTENT}jobs/{uuid}/outputs/tapisjob.out")
    assert b"".join(shared.streaming_content) == b"score = 0.97\n"
