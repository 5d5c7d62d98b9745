"""Which host folders a job may mount: the storage roots a slave offers to a project.

A slave offers named container roots (``/project``, ``/project_scratch``) that map to host folder
templates with ``{project}`` and ``{user}`` placeholders; the site's storage aliases name some of
them again (GPULab's ``/project_ghent`` for ``/project``). A job's ``hostPath`` must be one of those
roots or a folder below one; ``PROJECT_SHARE_AUTO`` means ``/project``; ``.ssh`` is the user's SSH
folder; ``tmpfs`` is memory. Everything else, ``..`` and the Docker socket are refused.
The mapping is pure apart from ``slave_roots`` (which reads the site's settings): the submit
check and the launch both call it.

Creating a job's storage folders on a local slave (``storage_prepare``), without ever following a
link: unlike the mapping above, this changes the slave's filesystem as root. The portal runs as root
on its local (``unix://``) slaves, and jobs can write in every folder below their storage root,
so a job can plant a symlink anywhere below its root folder. If the portal created, chowned or
chmodded folders by path, a later job's launch would follow that link and change any directory
on the host (``/root`` included).

So every folder is reached one component at a time from a trusted *anchor* through directory
file descriptors: ``open(name, O_DIRECTORY | O_NOFOLLOW, dir_fd=parent)``,
``mkdir(name, dir_fd=parent)``, then ``fchown`` and ``fchmod`` on the opened descriptor. No path
is ever resolved through a link:

- a symlink (to a folder, to a file, a chain, a dangling one) or a non-folder anywhere below the
  anchor refuses the mount before that component or anything below it was touched;
- a link swapped in between two steps makes the next ``open`` fail instead of being followed;
- a last pass walks the path by name again and checks that it still leads to the same folders
  (device and inode). A folder that was already open and then renamed and replaced by a link is
  caught there.

The anchor is ``PORTAL_STORAGE_BASE`` for roots below it. For an admin's root outside it, the
anchor is the root template's fixed folder (the part before the first placeholder). Only the
admin chooses those folders. They are opened by path (links allowed), created when missing and
never chowned or chmodded. The folders between the anchor and the root folder, such as
``<base>/project`` and ``<base>/home/<user>``, are shared by every project: the portal creates
them with mode 0755, owned by root, and never gives them a project's group. The root folder and
the mount folder get the project's group and mode 2775 on every launch (setgid keeps files
created inside in that group, and a damaged folder is repaired). The same applies to the folders
between them, but only when the portal creates them: a project's existing folders keep the mode
their users gave them. The user's ``.ssh`` folder is the exception: it is the user's, not a
project's, and keys in it let people into the user's jobs (``ssh.authorized_keys``), so it gets
mode 0700 on every launch and keeps its owner and group.

Remaining window: Docker gets the verified path as a string and resolves it again when it
bind-mounts at container start. This check runs right before ``engine.run``, after the image
pull. Jobs can write only strictly below a root folder, so the mount of a root itself
(``/project``, ``PROJECT_SHARE_AUTO``, ``.ssh``) has no window. For a subfolder, a job of the same
project that is already running would have to swap a component for a link in the sub-second gap
between this check and Docker's bind. The Docker API cannot bind an open descriptor, so this gap
cannot be closed from here.
"""

import dataclasses
import errno
import logging
import os
import posixpath
import stat
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

PROJECT_SHARE_AUTO = "PROJECT_SHARE_AUTO"
SSH_ALIAS = ".ssh"
TMPFS = "tmpfs"
SSH_TEMPLATE_KEY = ".ssh"


def default_roots(base: str) -> dict[str, str]:
    """Roots every slave offers unless an admin configured its own."""
    return {
        "/project": f"{base}/project/{{project}}",
        "/project_scratch": f"{base}/scratch/{{project}}",
        SSH_TEMPLATE_KEY: f"{base}/home/{{user}}/.ssh",
    }


def storage_aliases(items) -> dict[str, str]:
    """The site's storage aliases (PORTAL_STORAGE_ALIASES: "/project_ghent=/project", ...) as
    {alias: root}: another container root name for a root the slaves offer, such as GPULab's
    ``/project_ghent`` for the project's share. ValueError when one is malformed."""
    aliases: dict[str, str] = {}
    for item in items:
        alias, sep, root = str(item).partition("=")
        alias, root = alias.strip().rstrip("/"), root.strip().rstrip("/")
        for path in (alias, root):
            if (
                not sep
                or not path.startswith("/")
                or any(p in ("", ".", "..") for p in path.split("/")[1:])
            ):
                raise ValueError(f"storage alias {item!r} is not like /project_ghent=/project")
        aliases[alias] = root
    return aliases


def with_aliases(roots: dict[str, str], aliases: dict[str, str]) -> dict[str, str]:
    """``roots`` plus each alias of a root they offer (same folder template); a root the slave
    offers under the alias's own name wins over the alias."""
    extra = {a: roots[r] for a, r in aliases.items() if r in roots and a not in roots}
    return {**roots, **extra} if extra else roots


def slave_roots(slave) -> dict[str, str]:
    """The storage roots a slave offers (its own, else the site's default ones), with the
    site's aliases of them (PORTAL_STORAGE_ALIASES)."""
    roots = slave.storage_roots or default_roots(str(settings.PORTAL_STORAGE_BASE))
    return with_aliases(roots, storage_aliases(settings.PORTAL_STORAGE_ALIASES))


@dataclass(frozen=True)
class ResolvedMount:
    host_path: str  # absolute folder on the slave
    container_path: str
    root_host_path: str  # the root's folder: symlinks must not lead out of it
    root: str = ""  # the offered root it lies in ("/project", ".ssh"): names it in refusals
    anchor: str = ""  # the root template's fixed folder (before any placeholder)


def template_anchor(template: str) -> str:
    """The folder a root template fixes before its first placeholder.

    ``/srv/projects/{project}`` -> ``/srv/projects``; ``/srv/p-{project}/x`` -> ``/srv``; a
    template without placeholders names one fixed folder, whose parent is the anchor. Only the
    admin chooses these folders, so storage preparation may trust them (and whatever links
    lead to them) but nothing below them.
    """
    fixed = template.split("{", 1)[0]
    if fixed == template:
        return posixpath.dirname(template.rstrip("/")) or "/"
    if "/" not in fixed:
        return ""  # a relative template: storage preparation refuses it
    return fixed[: fixed.rfind("/")] or "/"


class StorageRefused(ValueError):
    def __init__(self, path: str, message: str):
        super().__init__(f"{path}: {message}")
        self.path = path
        self.message = message


def _is_socket_like(path: str) -> bool:
    return "docker.sock" in path or path.rstrip("/").endswith(".sock")


def resolve_mount(
    *, item: dict, index: int, roots: dict[str, str], project: str, user: str
) -> ResolvedMount | None:
    """Map one storage item to a host folder; None for tmpfs (no host path)."""
    path = f"request.docker.storage[{index}].hostPath"
    host = item.get("hostPath") or ""
    container = item.get("containerPath") or ""
    if host == TMPFS:
        return None
    if host.rstrip("/") == PROJECT_SHARE_AUTO:
        host = "/project/"
    if host.rstrip("/") == SSH_ALIAS:
        template = roots.get(SSH_TEMPLATE_KEY)
        if not template:
            raise StorageRefused(path, "this slave offers no SSH folder")
        folder = template.format(project=project, user=user)
        return ResolvedMount(folder, container, folder, SSH_ALIAS, template_anchor(template))
    if _is_socket_like(host):
        raise StorageRefused(path, "the Docker socket (or any socket) can never be mounted")
    if not host.startswith("/"):
        raise StorageRefused(path, "must be an absolute path below an offered storage root")
    parts = [p for p in host.split("/") if p]
    if ".." in parts or "." in parts:
        raise StorageRefused(path, "must not contain '.' or '..' components")
    normalised = "/" + "/".join(parts)
    for root in sorted((r for r in roots if r.startswith("/")), key=len, reverse=True):
        if normalised == root or normalised.startswith(root.rstrip("/") + "/"):
            remainder = normalised[len(root.rstrip("/")) :].lstrip("/")
            root_folder = roots[root].format(project=project, user=user)
            folder = posixpath.join(root_folder, remainder) if remainder else root_folder
            anchor = template_anchor(roots[root])
            return ResolvedMount(folder, container, root_folder, root.rstrip("/") or "/", anchor)
    offered = ", ".join(sorted(r for r in roots if r.startswith("/"))) or "none"
    raise StorageRefused(path, f"{host} is not offered to this project (storage roots: {offered})")


def resolve_mounts(
    *, storage: list[dict], roots: dict[str, str], project: str, user: str
) -> list[ResolvedMount]:
    mounts = []
    for index, item in enumerate(storage):
        mount = resolve_mount(item=item, index=index, roots=roots, project=project, user=user)
        if mount is not None:
            mounts.append(mount)
    return mounts


# --- creating the folders on the slave --------------------------------------------------------

log = logging.getLogger(__name__)

_OPEN_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
SHARED_MODE = 0o755  # folders above the root folder: every project's, the portal's to change
PROJECT_MODE = 0o2775  # setgid: files created inside keep the project's group
# The user's .ssh folder is the user's, not the project's, and its authorized_keys lets people
# into the user's jobs (ssh.authorized_keys): like ~/.ssh, nobody else may write in it.
SSH_FOLDER_MODE = 0o700
_NEW_PROJECT_FOLDER_MODE = 0o700  # until it has the project's group: never briefly too open


def _parts(path: str) -> list[str]:
    return [part for part in path.split("/") if part]


@dataclasses.dataclass(frozen=True)
class _Plan:
    """What to walk: ``names`` below ``anchor``; the first ``shared`` of them lie above the root
    folder."""

    anchor: str
    names: list[str]
    shared: int

    def where(self, mount: ResolvedMount, index: int) -> str:
        """How a refusal names component ``index``, in the job's terms where it can."""
        if index < self.shared:
            host = "/".join([self.anchor.rstrip("/"), *self.names[: index + 1]])
            return f"{host} (a folder above the {mount.root or 'storage'} root)"
        below_root = self.names[self.shared + 1 : index + 1]
        root = mount.root or "the storage root"
        return "/".join([root.rstrip("/"), *below_root]) if below_root else f"{root} (its folder)"


def _plan(mount: ResolvedMount, base: Path) -> _Plan:
    field = mount.container_path or mount.root
    if not (mount.root_host_path.startswith("/") and mount.host_path.startswith("/")):
        raise StorageRefused(field, "the storage root's host folder must be an absolute path")
    root, leaf = _parts(mount.root_host_path), _parts(mount.host_path)
    if any(part in (".", "..") for part in leaf + root):
        raise StorageRefused(field, "a '.' or '..' in the host folder is never followed")
    if leaf[: len(root)] != root:
        raise StorageRefused(field, "the host folder is not inside its storage root")
    base_parts = _parts(os.path.abspath(base))
    anchor: list[str] | None
    if len(root) > len(base_parts) and root[: len(base_parts)] == base_parts:
        anchor = base_parts
    else:
        anchor = _parts(mount.anchor) if mount.anchor.startswith("/") else None
        if anchor is None or len(root) <= len(anchor) or root[: len(anchor)] != anchor:
            raise StorageRefused(field, "the storage root has no fixed folder to start from")
    return _Plan(
        anchor="/" + "/".join(anchor), names=leaf[len(anchor) :], shared=len(root) - len(anchor) - 1
    )


def _open_anchor(plan: _Plan, field: str) -> int:
    """The admin's folder: created when missing, links in it are the admin's and followed."""
    try:
        os.makedirs(plan.anchor, mode=SHARED_MODE, exist_ok=True)
        return os.open(plan.anchor, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as error:
        message = f"the storage folder cannot be opened: {error.strerror}"
        raise StorageRefused(field, message) from None


def _refusal(field: str, where: str, error: OSError, parent: int, name: str) -> StorageRefused:
    """Why ``open(name, O_DIRECTORY | O_NOFOLLOW)`` failed, named for the job's owner."""
    if error.errno in (errno.ELOOP, errno.ENOTDIR):
        # With O_DIRECTORY, Linux answers ENOTDIR (not ELOOP) for a link: look at the entry
        # itself (lstat: never follows) to say which it is.
        try:
            is_link = stat.S_ISLNK(os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode)
        except OSError:
            is_link = error.errno == errno.ELOOP
        if is_link:
            return StorageRefused(
                field, f"{where} is a symlink; storage folders never follow links"
            )
        return StorageRefused(field, f"{where} is not a folder")
    return StorageRefused(field, f"{where} cannot be opened: {error.strerror}")


def _open_child(parent: int, name: str, field: str, where: str) -> int:
    try:
        return os.open(name, _OPEN_FLAGS, dir_fd=parent)
    except OSError as error:
        raise _refusal(field, where, error, parent, name) from None


def _step(parent: int, name: str, *, mode: int, field: str, where: str) -> tuple[int, bool]:
    """Open folder ``name`` inside ``parent``, creating it when missing: (fd, created)."""
    try:
        return os.open(name, _OPEN_FLAGS, dir_fd=parent), False
    except FileNotFoundError:
        pass
    except OSError as error:
        raise _refusal(field, where, error, parent, name) from None
    try:
        os.mkdir(name, mode, dir_fd=parent)  # never follows a link: EEXIST on any entry
        created = True
    except FileExistsError:
        created = False  # a concurrent launch made it (or a link appeared): open decides
    except OSError as error:
        raise _refusal(field, where, error, parent, name) from None
    return _open_child(parent, name, field, where), created


def _give_to_project(fd: int, gid: int, where: str) -> None:
    try:
        os.fchown(fd, -1, gid)
    except PermissionError:
        log.warning("cannot give %s to gid %s", where, gid)
    try:
        os.fchmod(fd, PROJECT_MODE)
    except PermissionError:
        log.warning("cannot set mode %o on %s", PROJECT_MODE, where)


def _keep_private(fd: int, where: str) -> None:
    """The ``.ssh`` folder: its owner (root, or whom the admin gave it) alone; never chowned,
    so a site's per-user owner stays."""
    try:
        os.fchmod(fd, SSH_FOLDER_MODE)
    except PermissionError:
        log.warning("cannot set mode %o on %s", SSH_FOLDER_MODE, where)


def _identity(fd: int) -> tuple[int, int]:
    stat = os.fstat(fd)
    return stat.st_dev, stat.st_ino


def _verify(plan: _Plan, mount: ResolvedMount, field: str, seen: list[tuple[int, int]]) -> None:
    """Walk the path by name again: it must still lead through the folders just prepared."""
    fds = [_open_anchor(plan, field)]
    try:
        for index, name in enumerate(plan.names):
            where = plan.where(mount, index)
            fds.append(_open_child(fds[-1], name, field, where))
            if _identity(fds[-1]) != seen[index]:
                raise StorageRefused(field, f"{where} was replaced while it was being prepared")
    finally:
        for fd in fds:
            os.close(fd)


def storage_prepare(*, mount: ResolvedMount, gid: int, base: Path) -> ResolvedMount:
    """Create ``mount``'s root folder and mount folder without following any link.

    Returns the mount with its host path as verified (the path Docker must bind). Raises
    ``StorageRefused`` naming the symlink or non-folder component. Nothing at or below a
    refused component was changed, and nothing outside the storage root ever is.
    """
    field = mount.container_path or mount.root
    plan = _plan(mount, base)
    fds = [_open_anchor(plan, field)]
    seen: list[tuple[int, int]] = []
    last = len(plan.names) - 1
    try:
        for index, name in enumerate(plan.names):
            where = plan.where(mount, index)
            shared = index < plan.shared
            mode = SHARED_MODE if shared else _NEW_PROJECT_FOLDER_MODE
            fd, created = _step(fds[-1], name, mode=mode, field=field, where=where)
            fds.append(fd)
            if shared:
                if created:
                    os.fchmod(fd, SHARED_MODE)  # exact, whatever the umask
            elif mount.root == SSH_ALIAS:
                _keep_private(fd, where)  # .ssh is its root folder, no folder below it
            elif created or index in (plan.shared, last):
                _give_to_project(fd, gid, where)
            seen.append(_identity(fd))
        _verify(plan, mount, field, seen)
    finally:
        for fd in fds:
            os.close(fd)
    return dataclasses.replace(mount, host_path="/" + "/".join(_parts(mount.host_path)))
