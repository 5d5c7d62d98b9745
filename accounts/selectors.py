"""The user and project selectors every app uses: which projects a user belongs to."""

from accounts.models import Membership, Project


def project_ids_of(user) -> set[int]:
    if not user or not user.is_authenticated:
        return set()
    cached = getattr(user, "_portal_project_ids", None)
    if cached is None:
        cached = set(Membership.objects.filter(user=user).values_list("project_id", flat=True))
        user._portal_project_ids = cached
    return cached


def projects_of(user):
    if not user or not user.is_authenticated:
        return Project.objects.none()
    return Project.objects.filter(memberships__user=user).order_by("name")
