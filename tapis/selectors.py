"""Which apps a user may see and run. Views, API and forms filter only through these."""

from django.db.models import Q, QuerySet

from accounts.permissions import user_is_admin
from jobs.selectors import project_ids_of
from tapis.models import App, AppShare


def app_list_visible_to(user) -> QuerySet[App]:
    """Own apps, apps shared with everyone, project apps of the user's projects, and apps
    shared with the user or one of their projects (tapis/shares.py; all for admins)."""
    if not user or not user.is_authenticated:
        return App.objects.none()
    apps = App.objects.select_related("owner", "project")
    if user_is_admin(user):
        return apps
    return apps.filter(
        Q(owner=user)
        | Q(visibility=App.Visibility.EVERYONE)
        | Q(visibility=App.Visibility.PROJECT, project_id__in=project_ids_of(user))
        | Q(
            pk__in=AppShare.objects.filter(
                Q(grantee_user=user) | Q(grantee_project_id__in=project_ids_of(user))
            ).values("app_id")
        )
    )


def app_get_visible(user, app_id: str, version: str | None = None) -> App | None:
    """The app with that id (and version; the newest one when None), if the user may see it."""
    apps = app_list_visible_to(user).filter(app_id=app_id)
    if version:
        return apps.filter(version=version).first()
    return apps.order_by("-created", "-id").first()


def app_can_change(user, app: App) -> bool:
    return app.owner_id == user.pk or user_is_admin(user)
