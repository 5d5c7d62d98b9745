"""A job's outputs: safe extraction of hostile tars, limits, listing, downloads (one file and a
streamed zip), path escapes, retention. The runtime path (folders made before start, the copy
at the end) on the scripted engine: tests/runtime/test_outputs_runtime.py."""

import io
import os
import stat
import tarfile
import zipfile
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from core.errors import NotAllowed, NotFound, ServiceError
from jobs.execution.outputs import (
    job_archive_outputs_dir,
    job_output_response,
    job_outputs_list,
    job_outputs_purge,
    outputs_extract,
)

pytestmark = pytest.mark.django_db
PORTAL = "/api/portal/"


# --- building tars -----------------------------------------------------------------------------


def _tar(entries) -> bytes:
    """entries: (name, kind, payload): kind file (bytes), dir, sym/hard (link target), chr, fifo."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, kind, payload in entries:
            info = tarfile.TarInfo(name)
            info.mtime = 1_700_000_000
            if kind == "file":
                info.size = len(payload)
                info.mode = 0o777  # whatever the container said: the archive makes it 0600
                tar.addfile(info, io.BytesIO(payload))
                continue
            info.type = {
                "dir": tarfile.DIRTYPE,
                "sym": tarfile.SYMTYPE,
                "hard": tarfile.LNKTYPE,
                "chr": tarfile.CHRTYPE,
                "fifo": tarfile.FIFOTYPE,
            }[kind]
            if kind in ("sym", "hard"):
                info.linkname = payload
            tar.addfile(info)
    return buffer.getvalue()


def _chunks(data: bytes, size: int = 100):
    return iter([data[i : i + size] for i in range(0, len(data), size)])


def _extract(tmp_path, entries, *, max_bytes=10**6, max_files=1000):
    dest = tmp_path / "job" / "outputs"
    result = outputs_extract(
        chunks=_chunks(_tar(entries)),
        top="outputs",
        dest=dest,
        max_bytes=max_bytes,
        max_files=max_files,
    )
    return dest, result


def _tree(root: Path) -> dict:
    out = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder) / name
            out[path.relative_to(root).as_posix()] = path
    return out


def test_hostile_entries_are_refused_and_nothing_lands_outside(tmp_path):
    outside = tmp_path / "victim.txt"
    dest, result = _extract(
        tmp_path,
        [
            ("outputs", "dir", None),
            ("outputs/ok.txt", "file", b"fine\n"),
            ("outputs/sub", "dir", None),
            ("outputs/sub/deep.txt", "file", b"deep\n"),
            ("outputs/../victim.txt", "file", b"escaped"),
            ("/abs.txt", "file", b"absolute"),
            ("outputs//etc/x", "file", b"double slash stays inside"),
            ("elsewhere/file.txt", "file", b"not under outputs"),
            ("outputs/out-link", "sym", "/etc/passwd"),
            ("outputs/up-link", "sym", "../../victim.txt"),
            ("outputs/in-link", "sym", "sub/deep.txt"),
            ("outputs/hard-in", "hard", "outputs/ok.txt"),
            ("outputs/hard-out", "hard", "../victim.txt"),
            ("outputs/dev", "chr", None),
            ("outputs/pipe", "fifo", None),
        ],
    )
    assert not outside.exists()
    assert not (tmp_path / "abs.txt").exists() and not (tmp_path / "job" / "elsewhere").exists()
    tree = _tree(dest)
    assert sorted(tree) == [
        "etc",
        "etc/x",
        "hard-in",
        "in-link",
        "ok.txt",
        "sub",
        "sub/deep.txt",
    ]
    assert (dest / "ok.txt").read_bytes() == b"fine\n"
    assert (dest / "hard-in").read_bytes() == b"fine\n" and not (dest / "hard-in").is_symlink()
    assert os.readlink(dest / "in-link") == "sub/deep.txt"
    refused = {line.split(":")[0] for line in result.refused}
    assert refused == {
        "outputs/../victim.txt",
        "/abs.txt",
        "elsewhere/file.txt",
        "outputs/out-link",
        "outputs/up-link",
        "outputs/hard-out",
        "outputs/dev",
        "outputs/pipe",
    }
    # Files 0600, folders 0700, whatever mode the tar carried.
    assert stat.S_IMODE((dest / "ok.txt").stat().st_mode) == 0o600
    assert stat.S_IMODE((dest / "sub").stat().st_mode) == 0o700
    assert stat.S_IMODE(dest.stat().st_mode) == 0o700
    assert (dest / "ok.txt").stat().st_mtime == 1_700_000_000
    assert result.stopped == ""


def test_a_link_planted_on_disk_is_never_written_through(tmp_path):
    dest = tmp_path / "job" / "outputs"
    dest.mkdir(parents=True)
    target = tmp_path / "elsewhere"
    target.mkdir()
    (dest / "sub").symlink_to(target)  # a link from an earlier copy pointing out
    os.symlink(tmp_path / "secret", dest / "f.txt")
    result = outputs_extract(
        chunks=_chunks(
            _tar([("outputs/sub/x.txt", "file", b"x"), ("outputs/f.txt", "file", b"y")])
        ),
        top="outputs",
        dest=dest,
        max_bytes=100,
        max_files=100,
    )
    assert list(target.iterdir()) == [] and not (tmp_path / "secret").exists()
    assert len(result.refused) == 2


def test_the_file_count_limit_stops_the_copy(tmp_path):
    entries = [(f"outputs/f{i}.txt", "file", b"x") for i in range(10)]
    dest, result = _extract(tmp_path, entries, max_files=4)
    assert len(list(dest.iterdir())) == 4
    assert "PORTAL_OUTPUT_MAX_FILES" in result.stopped and result.files == 4


def test_the_byte_limit_stops_the_copy_before_a_file_that_would_pass_it(tmp_path):
    entries = [(f"outputs/f{i}.bin", "file", b"0123456789") for i in range(5)]
    dest, result = _extract(tmp_path, entries, max_bytes=35)
    assert sorted(p.name for p in dest.iterdir()) == ["f0.bin", "f1.bin", "f2.bin"]
    assert result.bytes == 30 and "PORTAL_OUTPUT_MAX_BYTES" in result.stopped


# --- reading: list, download, escapes ----------------------------------------------------------


@pytest.fixture
def finished(submit):
    """A job of alice's project with an archived output folder."""
    job = submit()
    root = job_archive_outputs_dir(job)
    (root / "sub").mkdir(parents=True)
    (root / "a.txt").write_bytes(b"alpha\n")
    (root / "sub" / "b.txt").write_bytes(b"beta\n" * 1000)
    return job


def test_list_shows_path_size_time_and_type(finished, member):
    top = job_outputs_list(job=finished, user=member)
    assert [(e["path"], e["type"], e["size"]) for e in top] == [
        ("a.txt", "file", 6),
        ("sub", "dir", 0),
    ]
    assert top[0]["modified"].endswith("Z")
    deep = job_outputs_list(job=finished, user=member, recursive=True)
    assert [e["path"] for e in deep] == ["a.txt", "sub", "sub/b.txt"]
    assert [e["path"] for e in job_outputs_list(job=finished, user=member, path="sub")] == [
        "sub/b.txt"
    ]


def test_outsiders_see_no_outputs(finished, outsider):
    with pytest.raises(NotAllowed):
        job_outputs_list(job=finished, user=outsider)
    with pytest.raises(NotAllowed):
        job_output_response(job=finished, user=outsider, path="a.txt")


@pytest.mark.parametrize(
    "path, error",
    [
        ("../a.txt", ServiceError),
        ("sub/../../x", ServiceError),
        ("/etc/passwd", ServiceError),
        ("missing.txt", NotFound),
        ("out", NotAllowed),  # a link pointing outside the folder
        ("outdir/passwd", NotAllowed),
    ],
)
def test_paths_leaving_the_folder_are_refused(finished, member, tmp_path, path, error):
    root = job_archive_outputs_dir(finished)
    secret = tmp_path / "secret.txt"
    secret.write_text("secret")
    os.symlink(secret, root / "out")
    os.symlink(tmp_path, root / "outdir")
    with pytest.raises(error):
        job_output_response(job=finished, user=member, path=path)
    if error is not NotFound:
        with pytest.raises(error):
            job_outputs_list(job=finished, user=member, path=path)


def test_one_file_downloads_as_an_attachment(finished, member):
    response = job_output_response(job=finished, user=member, path="sub/b.txt")
    assert b"".join(response.streaming_content) == b"beta\n" * 1000
    assert 'attachment; filename="b.txt"' in response["Content-Disposition"]


def test_a_folder_downloads_as_a_streamed_zip_with_the_same_contents(finished, member):
    response = job_output_response(job=finished, user=member, path="")
    assert response.streaming and response["Content-Type"] == "application/zip"
    data = b"".join(response.streaming_content)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        contents = {name: archive.read(name) for name in archive.namelist()}
    assert contents == {"a.txt": b"alpha\n", "sub/b.txt": b"beta\n" * 1000}
    sub = job_output_response(job=finished, user=member, path="sub")
    with zipfile.ZipFile(io.BytesIO(b"".join(sub.streaming_content))) as archive:
        assert archive.namelist() == ["b.txt"]


def test_over_size_downloads_are_refused(finished, member, settings):
    settings.PORTAL_OUTPUT_DOWNLOAD_MAX_BYTES = 1000
    for path, as_zip in (("sub/b.txt", False), ("", True), ("sub", False)):
        with pytest.raises(ServiceError) as refused:
            job_output_response(job=finished, user=member, path=path, as_zip=as_zip)
        assert refused.value.status_code == 413
    assert job_output_response(job=finished, user=member, path="a.txt").status_code == 200


def test_a_job_without_outputs_says_so(submit, member):
    job = submit()
    with pytest.raises(NotFound):
        job_outputs_list(job=job, user=member)


def test_rest_lists_and_downloads(finished, member, outsider):
    client = APIClient()
    client.force_authenticate(member)
    base = f"{PORTAL}jobs/{finished.uuid}/outputs/"
    listed = client.get(base, {"recursive": "true"})
    assert listed.status_code == 200
    assert [e["path"] for e in listed.json()["items"]] == ["a.txt", "sub", "sub/b.txt"]
    one = client.get(base + "download", {"path": "a.txt"})
    assert one.status_code == 200 and b"".join(one.streaming_content) == b"alpha\n"
    zipped = client.get(base + "download", {"path": "sub", "zip": "1"})
    with zipfile.ZipFile(io.BytesIO(b"".join(zipped.streaming_content))) as archive:
        assert archive.read("b.txt") == b"beta\n" * 1000
    escape = client.get(base + "download", {"path": "../../etc/passwd"})
    assert escape.status_code == 400 and "path" in escape.json()["error"]
    client.force_authenticate(outsider)
    assert client.get(base).status_code == 403
    assert client.get(base + "download", {"path": "a.txt"}).status_code == 403


def test_the_job_page_lists_outputs_with_download_links(finished, member, client):
    client.force_login(member)
    page = client.get(f"/jobs/{finished.uuid}/").content.decode()
    assert 'id="outputs-table"' in page
    assert f"/jobs/{finished.uuid}/outputs/download?path=sub/b.txt" in page
    download = client.get(f"/jobs/{finished.uuid}/outputs/download", {"path": "sub/b.txt"})
    assert b"".join(download.streaming_content) == b"beta\n" * 1000
    refused = client.get(f"/jobs/{finished.uuid}/outputs/download", {"path": "../x"})
    assert refused.status_code == 400


# --- retention ---------------------------------------------------------------------------------


def test_purge_removes_outputs_past_retention_only(submit, settings):
    settings.PORTAL_OUTPUT_RETENTION_DAYS = 7
    now = timezone.now()
    old, recent, running = submit(), submit(), submit()
    for job, ended in ((old, now - timedelta(days=8)), (recent, now - timedelta(days=2))):
        job.ended_at = ended
        job.save(update_fields=["ended_at"])
    for job in (old, recent, running):
        job_archive_outputs_dir(job).mkdir(parents=True)
        (job_archive_outputs_dir(job) / "f").write_text("x")
    assert job_outputs_purge(now=now) == 1
    assert not job_archive_outputs_dir(old).exists()
    assert job_archive_outputs_dir(recent).exists() and job_archive_outputs_dir(running).exists()
    assert old.events.filter(message__contains="outputs removed after 7 days").exists()
    settings.PORTAL_OUTPUT_RETENTION_DAYS = 0
    assert job_outputs_purge(now=now + timedelta(days=100)) == 0
    assert job_archive_outputs_dir(recent).exists()
