"""The site's mapping from directory groups to projects and roles (PORTAL_SIGNIN_GROUP_MAP).

A JSON object: each key is a group as the directory names it (an LDAP group's DN, an OIDC
groups-claim value: a Keycloak group path, an Entra ID group object id), each value one grant
or a list of grants ``{"project": NAME, "role": "member"|"manager", "gid": N}`` (``role``
defaults to member; ``gid`` is only used to create a missing project when the directory tells
no gidNumber). Keys match case-insensitively. Pure: no database.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from accounts.models import PROJECT_NAME_VALIDATOR, Membership

ROLES = (Membership.Role.MEMBER, Membership.Role.MANAGER)  # weakest first
PROJECT_NAME = re.compile(PROJECT_NAME_VALIDATOR.regex)


class GroupMapError(ValueError):
    """The mapping is malformed; the message names the key and the rule."""


@dataclass(frozen=True)
class GroupRule:
    project: str
    role: str
    gid: int | None = None


@dataclass(frozen=True)
class DirectoryGroup:
    """A group the directory says the user is in; ``gid`` its gidNumber where it has one."""

    name: str
    gid: int | None = None


@dataclass(frozen=True)
class ProjectGrant:
    """What the mapping grants in one project: the strongest role of the user's groups, the
    groups that grant it, and the GID a missing project gets (the directory's first)."""

    project: str
    role: str
    groups: tuple[str, ...]
    gid: int | None


def _key(name: str) -> str:
    return name.strip().casefold()


def _rule(where: str, value: object) -> GroupRule:
    if not isinstance(value, dict):
        raise GroupMapError(f"{where}: must be an object with a 'project'")
    unknown = set(value) - {"project", "role", "gid"}
    if unknown:
        raise GroupMapError(f"{where}: unknown keys {sorted(unknown)}")
    project = value.get("project")
    if not isinstance(project, str) or not PROJECT_NAME.match(project):
        raise GroupMapError(f"{where}.project: {PROJECT_NAME_VALIDATOR.message}")
    role = value.get("role", Membership.Role.MEMBER)
    if role not in ROLES:
        raise GroupMapError(f"{where}.role: must be one of {', '.join(ROLES)}")
    gid = value.get("gid")
    if gid is not None and (isinstance(gid, bool) or not isinstance(gid, int) or gid < 1):
        raise GroupMapError(f"{where}.gid: must be a positive integer")
    return GroupRule(project=project, role=str(role), gid=gid)


def group_map_parse(value: str | Mapping | None) -> dict[str, tuple[GroupRule, ...]]:
    """The mapping of the setting (JSON text or an already parsed object), keys casefolded."""
    if not value:
        return {}
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as error:
            raise GroupMapError(f"not JSON: {error}") from None
    if not isinstance(value, Mapping):
        raise GroupMapError("must be a JSON object of group -> grant")
    parsed: dict[str, tuple[GroupRule, ...]] = {}
    for group, grants in value.items():
        if not isinstance(group, str) or not group.strip():
            raise GroupMapError(f"{group!r}: a group must be a non-empty string")
        items = grants if isinstance(grants, list) else [grants]
        rules = tuple(_rule(f"{group}[{i}]", item) for i, item in enumerate(items))
        key = _key(group)
        if key in parsed:
            raise GroupMapError(f"{group}: named twice (keys match case-insensitively)")
        parsed[key] = rules
    return parsed


def project_grants(
    groups: Iterable[DirectoryGroup], group_map: Mapping[str, tuple[GroupRule, ...]]
) -> dict[str, ProjectGrant]:
    """project name -> what the user's groups grant there: the strongest role wins; the GID is
    the first directory gidNumber of the granting groups, else the first rule's ``gid``."""
    found: dict[str, list[tuple[DirectoryGroup, GroupRule]]] = {}
    for group in sorted(groups, key=lambda g: _key(g.name)):
        for rule in group_map.get(_key(group.name), ()):
            found.setdefault(rule.project, []).append((group, rule))
    grants = {}
    for project, pairs in found.items():
        gids = [g.gid for g, _ in pairs if g.gid is not None]
        gids += [r.gid for _, r in pairs if r.gid is not None]
        grants[project] = ProjectGrant(
            project=project,
            role=max((r.role for _, r in pairs), key=ROLES.index),
            groups=tuple(dict.fromkeys(g.name for g, _ in pairs)),
            gid=gids[0] if gids else None,
        )
    return grants
