"""The user and project selectors every app uses: which projects a user belongs to."""

from accounts.models import Membership, Project


def project_ids_of(user) -> set[int]:
    if not user or not user.is_authenticated:
        return set()
    cached = getattr(user, "_portal_project_ids", None)
    if cached is None:
        # No order: Membership's default one joined the project and user tables to every
        # request's first query.
        memberships = Membership.objects.filter(user=user).order_by()
        cached = set(memberships.values_list("project_id", flat=True))
        user._portal_project_ids = cached
    return cached


def projects_of(user):
    if not user or not user.is_authenticated:
        return Project.objects.none()
    return Project.objects.filter(memberships__user=user).order_by("name")


def sole_project_of(user) -> tuple[Project | None, int]:
    """The user's project when they belong to exactly one (else None), and how many they belong
    to (0, 1 or 2 for "several"). One query; it also fills ``project_ids_of``'s cache when the
    answer settles it, so the membership check of the submit that follows costs none."""
    if not user or not user.is_authenticated:
        return None, 0
    mine = list(projects_of(user)[:2])
    if len(mine) == 1 and getattr(user, "_portal_project_ids", None) is None:
        user._portal_project_ids = {mine[0].pk}
    return (mine[0] if len(mine) == 1 else None), len(mine)
