"""The user and project selectors every app uses: which projects a user belongs to."""

from django.db import DEFAULT_DB_ALIAS

from accounts.models import Membership, Project
from core.compiled_sql import CompiledRows

_PROJECT_IDS_SQL = CompiledRows(maxsize=512)


def project_ids_of(user) -> set[int]:
    if not user or not user.is_authenticated:
        return set()
    cached = getattr(user, "_portal_project_ids", None)
    if cached is None:
        # No order: Membership's default one joined the project and user tables to every
        # request's first query. Its SQL is kept per user: most API requests ask it.
        rows = _PROJECT_IDS_SQL.rows(
            user.pk,
            lambda: Membership.objects.filter(user=user).order_by().values_list("project_id"),
        )
        cached = {project_id for (project_id,) in rows}
        user._portal_project_ids = cached
    return cached


def projects_of(user):
    if not user or not user.is_authenticated:
        return Project.objects.none()
    return Project.objects.filter(memberships__user=user).order_by("name")


# Every submit that names no project asks it: its SQL is kept per user (building and compiling
# the join cost 0.5 of its 0.6 ms).
_SOLE_PROJECT_SQL = CompiledRows(maxsize=512)
_PROJECT_COLUMNS = [field.attname for field in Project._meta.concrete_fields]


def sole_project_of(user) -> tuple[Project | None, int]:
    """The user's project when they belong to exactly one (else None), and how many they belong
    to (0, 1 or 2 for "several"). One query; it also fills ``project_ids_of``'s cache when the
    answer settles it, so the membership check of the submit that follows costs none."""
    if not user or not user.is_authenticated:
        return None, 0
    rows = _SOLE_PROJECT_SQL.rows(
        user.pk,
        lambda: projects_of(user).values_list(*_PROJECT_COLUMNS),
        window=slice(0, 2),
    )
    mine = [Project.from_db(DEFAULT_DB_ALIAS, _PROJECT_COLUMNS, row) for row in rows]
    if len(mine) == 1 and getattr(user, "_portal_project_ids", None) is None:
        user._portal_project_ids = {mine[0].pk}
    return (mine[0] if len(mine) == 1 else None), len(mine)
