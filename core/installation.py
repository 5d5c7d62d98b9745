"""What one installation makes once and keeps, private to the portal's user.

Imported by settings, so it uses nothing of Django: the var directory (mode 0700, created when
missing so every ``manage.py`` command works on a fresh clone), and small values generated on
first use and kept in it (the secret key, the instance id), each in a file of mode 0600.
"""

import os
import secrets
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600


class Writer(Protocol):
    """Where a message goes: a stream, or a management command's ``self.stderr``."""

    def write(self, text: str, /) -> object: ...


def private_dir(path: Path) -> Path:
    """Create ``path`` (and parents) if missing; make it 0700 if it is ours."""
    path = Path(path)
    path.mkdir(mode=PRIVATE_DIR, parents=True, exist_ok=True)
    make_private(path)
    return path


def make_private(path: Path) -> None:
    """Drop group and other bits of a file or directory we own (0700 / 0600).

    Someone else's file (a shared, admin-managed directory) is left as it is.
    """
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return
    if info.st_uid != os.geteuid() or not info.st_mode & 0o077:
        return
    mode = PRIVATE_DIR if stat.S_ISDIR(info.st_mode) else PRIVATE_FILE
    os.chmod(path, mode)


def private_open(path: Path, flags: int = os.O_WRONLY | os.O_CREAT | os.O_TRUNC) -> int:
    """``os.open`` that creates the file as 0600 whatever the umask, and fixes an old one."""
    fd = os.open(path, flags, PRIVATE_FILE)
    os.fchmod(fd, PRIVATE_FILE)
    return fd


def write_private(path: Path, data: bytes) -> None:
    """Write ``data`` atomically to ``path`` (mode 0600): readers never see half a file."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    fd = private_open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def kept_value(path: Path, make: Callable[[], str]) -> str:
    """The value stored in ``path``; made with ``make()`` and stored (0600) the first time.

    Processes starting together (web, workers, watcher) agree: the value is written to a
    temporary file and linked into place, and a process that loses the race reads the winner's.
    """
    path = Path(path)
    try:
        return _read_value(path)
    except FileNotFoundError:
        pass
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    fd = private_open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    with os.fdopen(fd, "w") as handle:
        handle.write(make() + "\n")
    try:
        os.link(tmp, path)  # fails if another process stored its value first
    except FileExistsError:
        pass
    finally:
        tmp.unlink(missing_ok=True)
    return _read_value(path)


def _read_value(path: Path) -> str:
    make_private(path)
    value = path.read_text().strip()
    if not value:
        raise ValueError(f"{path} is empty: delete it to have a new value made")
    return value


def new_secret_key() -> str:
    return secrets.token_urlsafe(50)


def new_instance_id() -> str:
    # Short enough to read in `docker ps --filter label=gpuportal.instance=...`.
    return "gp-" + secrets.token_hex(6)


def database_migrate_if_needed(*, stderr: Writer | None = None) -> bool:
    """Bring an unmigrated database up to date (True when migrations ran).

    For commands that use the portal's own database on a fresh clone (the benchmarks): they
    work there without a separate ``manage.py migrate`` first, as every command should."""
    from django.core.management import call_command
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connection)
    if not executor.migration_plan(executor.loader.graph.leaf_nodes()):
        return False
    if stderr is not None:
        stderr.write("the database is not migrated yet: running migrate first\n")
    call_command("migrate", interactive=False, verbosity=0)
    return True
