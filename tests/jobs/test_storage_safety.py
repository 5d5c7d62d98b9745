"""Storage preparation never follows a link (issue 10.1).

The portal runs as root on local slaves and jobs can write below their storage root. A link a
job plants there must never make the portal create, chown or chmod anything outside the root:
every refusal here also checks that the link's target keeps its exact mode, owner and contents.
The tests run as root, so a chown through a link would really happen.
"""

import contextlib
import os
import stat
from pathlib import Path

import pytest

from clusters.runtime.engine import ContainerState
from jobs.execution import storage as prepare_module
from jobs.execution.storage import StorageRefused, default_roots, resolve_mount, storage_prepare

GID = 6001


@pytest.fixture
def base(settings) -> Path:
    return Path(settings.PORTAL_STORAGE_BASE)


def mount_for(base: Path, host_path: str, *, roots=None, user="alice"):
    return resolve_mount(
        item={"hostPath": host_path, "containerPath": "/x"},
        index=0,
        roots=roots or default_roots(str(base)),
        project="vision",
        user=user,
    )


def prepare(base: Path, host_path: str, **kwargs):
    return storage_prepare(mount=mount_for(base, host_path, **kwargs), gid=GID, base=base)


def snapshot(*paths: Path) -> dict:
    """Mode, owner, inode and contents of each path and everything below it (links not
    followed): what a redirected preparation would change."""
    seen = {}
    for top in paths:
        for path in [top, *(top.rglob("*") if top.is_dir() and not top.is_symlink() else [])]:
            info = os.lstat(path)
            content = path.read_bytes() if stat.S_ISREG(info.st_mode) else None
            seen[str(path)] = (info.st_mode, info.st_uid, info.st_gid, info.st_ino, content)
    return seen


@pytest.fixture
def victim(tmp_path) -> Path:
    """A private host folder, 0700 root:root with a secret inside (think /root)."""
    folder = tmp_path / "victim"
    folder.mkdir()
    (folder / "secret.txt").write_text("top secret")
    os.chmod(folder / "secret.txt", 0o600)
    os.chown(folder, 0, 0)
    os.chmod(folder, 0o700)
    return folder


@pytest.fixture
def victim_file(tmp_path) -> Path:
    path = tmp_path / "victim.txt"
    path.write_text("do not touch")
    os.chown(path, 0, 0)
    os.chmod(path, 0o600)
    return path


@pytest.fixture
def project_root(base) -> Path:
    """The project's root folder as an earlier launch left it."""
    prepare(base, "/project")
    return base / "project" / "vision"


def assert_refused(base, host_path, *, untouched, says, **kwargs):
    before = snapshot(*untouched)
    with pytest.raises(StorageRefused) as caught:
        prepare(base, host_path, **kwargs)
    assert says in caught.value.message, caught.value.message
    assert snapshot(*untouched) == before
    return caught.value


# --- links planted by a job ------------------------------------------------------------------


def test_link_to_a_directory_is_refused_and_target_untouched(base, project_root, victim):
    (project_root / "evil").symlink_to(victim)
    refused = assert_refused(
        base, "/project/evil", untouched=[victim], says="/project/evil is a symlink"
    )
    assert refused.path == "/x"
    assert stat.S_IMODE(os.lstat(victim).st_mode) == 0o700
    assert (os.lstat(victim).st_uid, os.lstat(victim).st_gid) == (0, 0)
    # Deeper below the link: nothing is created in the target either.
    assert_refused(base, "/project/evil/sub", untouched=[victim], says="/project/evil is a symlink")
    assert not (victim / "sub").exists()


def test_link_to_a_file_is_refused_and_file_untouched(base, project_root, victim_file):
    (project_root / "evil").symlink_to(victim_file)
    assert_refused(base, "/project/evil", untouched=[victim_file], says="is a symlink")
    assert victim_file.read_text() == "do not touch"


def test_link_chain_and_dangling_link_are_refused(base, project_root, victim, tmp_path):
    (tmp_path / "hop2").symlink_to(victim)
    (tmp_path / "hop1").symlink_to(tmp_path / "hop2")
    (project_root / "evil").symlink_to(tmp_path / "hop1")
    assert_refused(base, "/project/evil", untouched=[victim], says="/project/evil is a symlink")
    (project_root / "dangling").symlink_to(tmp_path / "nowhere")
    assert_refused(base, "/project/dangling", untouched=[victim], says="is a symlink")
    assert not (tmp_path / "nowhere").exists()


def test_link_as_the_root_folder_itself(base, victim):
    (base / "project").mkdir(parents=True)
    (base / "project" / "vision").symlink_to(victim)
    assert_refused(base, "/project", untouched=[victim], says="/project (its folder) is a symlink")
    assert_refused(base, "/project/sub", untouched=[victim], says="is a symlink")


def test_link_as_the_ssh_folder(base, victim):
    (base / "home" / "alice").mkdir(parents=True)
    (base / "home" / "alice" / ".ssh").symlink_to(victim)
    assert_refused(base, ".ssh", untouched=[victim], says=".ssh (its folder) is a symlink")


def test_link_in_an_intermediate_component(base, project_root, victim, tmp_path):
    # Below the root folder (a job's doing).
    (project_root / "a").symlink_to(victim)
    assert_refused(base, "/project/a/b", untouched=[victim], says="/project/a is a symlink")
    assert not (victim / "b").exists()
    # Above the root folder (the portal's shared folders): named by host path.
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "vision").mkdir(parents=True)
    os.chmod(elsewhere / "vision", 0o700)
    (base / "scratch").symlink_to(elsewhere)
    refused = assert_refused(base, "/project_scratch", untouched=[elsewhere], says="is a symlink")
    assert f"{base}/scratch (a folder above the /project_scratch root)" in refused.message


def test_a_file_where_a_folder_should_be(base, project_root, victim_file):
    (project_root / "data").write_text("plain file")
    assert_refused(
        base, "/project/data/run1", untouched=[project_root / "data"], says="is not a folder"
    )


def test_dot_dot_user_name_never_walks_up(base, victim):
    # Django allows ".." as a user name: the SSH template would lead to <base>/.ssh.
    with pytest.raises(StorageRefused) as caught:
        prepare(base, ".ssh", user="..")
    assert "'..'" in caught.value.message
    assert not (base / ".ssh").exists()


# --- links swapped in while the portal prepares -----------------------------------------------


def swap_in_link(path: Path, target: Path) -> None:
    path.rename(path.with_name(path.name + ".moved"))
    path.symlink_to(target)


def test_link_swapped_in_right_after_mkdir(base, project_root, victim, monkeypatch):
    real_mkdir = os.mkdir

    def mkdir_then_swap(name, mode=0o777, *, dir_fd=None):
        real_mkdir(name, mode, dir_fd=dir_fd)
        if name == "a":  # a job replaces the fresh folder before the portal opens it
            swap_in_link(project_root / "a", victim)

    monkeypatch.setattr(prepare_module.os, "mkdir", mkdir_then_swap)
    assert_refused(base, "/project/a/b", untouched=[victim], says="/project/a is a symlink")
    assert not (victim / "b").exists()


def test_link_swapped_in_for_an_opened_folder(base, project_root, victim, monkeypatch):
    real_mkdir = os.mkdir

    def swap_then_mkdir(name, mode=0o777, *, dir_fd=None):
        if name == "b":  # "a" is already open: the swap must not redirect the result
            swap_in_link(project_root / "a", victim)
        real_mkdir(name, mode, dir_fd=dir_fd)

    monkeypatch.setattr(prepare_module.os, "mkdir", swap_then_mkdir)
    refused = assert_refused(base, "/project/a/b", untouched=[victim], says="/project/a is a")
    assert "symlink" in refused.message
    assert not (victim / "b").exists()
    # The folder was made in the real (moved) folder, never through the link.
    assert (project_root / "a.moved" / "b").is_dir()


def test_root_folder_replaced_by_a_link_after_preparation_is_caught(base, victim, monkeypatch):
    real_fstat = os.fstat
    swapped = []

    def fstat_then_swap(fd):
        result = real_fstat(fd)
        root = base / "project" / "vision"
        if not swapped and root.is_dir() and os.path.samestat(result, os.stat(root)):
            swapped.append(True)
            swap_in_link(root, victim)
        return result

    monkeypatch.setattr(prepare_module.os, "fstat", fstat_then_swap)
    assert_refused(base, "/project", untouched=[victim], says="is a symlink")
    assert swapped


# --- what keeps working ----------------------------------------------------------------------


def mode_and_group(path: Path) -> tuple[int, int]:
    info = os.lstat(path)
    return stat.S_IMODE(info.st_mode), info.st_gid


def test_fresh_root_folder_gets_group_and_setgid(base):
    mount = prepare(base, "/project")
    root = base / "project" / "vision"
    assert mount.host_path == str(root)
    assert mode_and_group(root) == (0o2775, GID)
    # The shared folder above it is the portal's, not the project's.
    assert mode_and_group(base / "project") == (0o755, 0)


def test_existing_folder_is_repaired_and_contents_kept(base):
    root = base / "project" / "vision"
    root.mkdir(parents=True)
    os.chmod(root, 0o700)
    (root / "results.csv").write_text("1,2,3")
    before = snapshot(root / "results.csv")
    prepare(base, "/project")
    assert mode_and_group(root) == (0o2775, GID)
    assert snapshot(root / "results.csv") == before
    prepare(base, "/project")  # again: nothing changes
    assert mode_and_group(root) == (0o2775, GID)


def test_nested_folders_are_created_with_the_project_group(base, project_root):
    mount = prepare(base, "/project/a/b")
    assert mount.host_path == str(project_root / "a" / "b")
    assert mode_and_group(project_root / "a") == (0o2775, GID)
    assert mode_and_group(project_root / "a" / "b") == (0o2775, GID)


def test_existing_subfolder_keeps_its_mode_the_mount_folder_is_set(base, project_root):
    (project_root / "private").mkdir()
    os.chown(project_root / "private", 1000, 0)
    os.chmod(project_root / "private", 0o750)
    before = os.lstat(project_root / "private")
    prepare(base, "/project/private/run1")
    after = os.lstat(project_root / "private")
    assert (after.st_mode, after.st_uid, after.st_gid) == (before.st_mode, 1000, 0)
    assert mode_and_group(project_root / "private" / "run1") == (0o2775, GID)


def test_ssh_folder_is_prepared(base):
    mount = prepare(base, ".ssh")
    folder = base / "home" / "alice" / ".ssh"
    assert mount.host_path == str(folder)
    # The user's, not the project's: its authorized_keys lets people into her jobs.
    assert mode_and_group(folder) == (0o700, 0)
    assert mode_and_group(base / "home" / "alice") == (0o755, 0)
    # Repaired on every launch; the owner a site gave it stays.
    os.chown(folder, 1000, GID)
    os.chmod(folder, 0o2775)
    prepare(base, ".ssh")
    assert (os.lstat(folder).st_uid, mode_and_group(folder)) == (1000, (0o700, GID))


def test_admin_root_outside_the_base_starts_at_its_fixed_folder(base, tmp_path, victim):
    real = tmp_path / "real-srv"
    real.mkdir()
    (tmp_path / "srv").symlink_to(real)  # the admin's own link above the template: allowed
    roots = {"/data": f"{tmp_path}/srv/projects/{{project}}/data"}
    mount = prepare(base, "/data/run", roots=roots)
    assert mount.host_path == f"{tmp_path}/srv/projects/vision/data/run"
    assert mode_and_group(real / "projects") == (0o755, 0)  # the anchor: created, not given
    assert mode_and_group(real / "projects" / "vision") == (0o755, 0)  # above the root folder
    assert mode_and_group(real / "projects" / "vision" / "data") == (0o2775, GID)
    assert mode_and_group(real / "projects" / "vision" / "data" / "run") == (0o2775, GID)
    (real / "projects" / "vision" / "data" / "evil").symlink_to(victim)
    assert_refused(
        base, "/data/evil", untouched=[victim], says="/data/evil is a symlink", roots=roots
    )


# --- through the launch ----------------------------------------------------------------------


class RecordingEngine:
    """Stands in for Docker: the launch path up to ``engine.run``, recording what it binds."""

    def __init__(self):
        self.specs = []

    def find_by_label(self, *_):
        return []

    def image_present(self, _reference):
        return True

    def run(self, spec):
        self.specs.append(spec)
        return "c0ffee" * 10

    def inspect(self, _container_id):
        # The engine's own answer type: the launch reads what a real inspect gives.
        return ContainerState(
            id=_container_id, name="job", status="running", running=True, exit_code=None,
            oom_killed=False, started_at=None, finished_at=None, pid=4242,
        )  # fmt: skip


@pytest.fixture
def engine(monkeypatch):
    recording = RecordingEngine()

    @contextlib.contextmanager
    def engine_for(_slave):
        yield recording

    monkeypatch.setattr("jobs.execution.runs.engine_for", engine_for)
    return recording


def launch(submit, hello_world, storage):
    from jobs.execution.runs import job_launch_run
    from jobs.models import Job
    from jobs.scheduler_bridge.tick import tick

    hello_world["request"]["docker"]["storage"] = storage
    job = submit(hello_world)
    tick()
    job.refresh_from_db()
    assert job.status == "ASSIGNED"
    job_launch_run(job_id=job.pk)
    return Job.objects.get(pk=job.pk)


@pytest.mark.django_db
def test_launch_refuses_a_planted_link_and_changes_nothing(
    submit, hello_world, engine, base, project_root, victim
):
    (project_root / "evil").symlink_to(victim)
    before = snapshot(victim)
    job = launch(submit, hello_world, [{"hostPath": "/project/evil", "containerPath": "/x"}])
    assert job.status == "FAILED"
    assert job.end_reason.startswith("storage: /x/: /project/evil is a symlink")
    assert engine.specs == []  # no container was made
    assert snapshot(victim) == before


@pytest.mark.django_db
def test_launch_binds_the_verified_folder(submit, hello_world, engine, base):
    job = launch(submit, hello_world, [{"hostPath": "/project/a/b", "containerPath": "/x"}])
    assert job.status == "RUNNING", job.end_reason
    [spec] = engine.specs
    folder = base / "project" / "vision" / "a" / "b"
    assert [(m.source, m.target) for m in spec.binds] == [(str(folder), "/x")]
    assert mode_and_group(folder) == (0o2775, GID)
