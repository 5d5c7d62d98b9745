"""Which host folders a job may mount: the storage roots a slave offers to a project.

A slave offers named container roots (``/project``, ``/project_scratch``) that map to host folder
templates with ``{project}`` and ``{user}`` placeholders; the site's storage aliases name some of
them again (GPULab's ``/project_ghent`` for ``/project``). A job's ``hostPath`` must be one of those
roots or a folder below one; ``PROJECT_SHARE_AUTO`` means ``/project``; ``.ssh`` is the user's SSH
folder; ``tmpfs`` is memory. Everything else, ``..`` and the Docker socket are refused.
Pure functions apart from ``slave_roots`` (which reads the site's settings): the submit check
and the launch both call them. Creating the folders on the slave, without ever following a
link, is ``jobs.execution.storage_prepare``.
"""

import posixpath
from dataclasses import dataclass

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
