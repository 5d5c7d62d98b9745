"""Which apps a user may see and run. Views, API and forms filter only through these."""

from django.db.models import Q, QuerySet

from accounts.permissions import user_is_admin
from jobs.selectors import project_ids_of
from tapis.models import App, AppShare


def app_list_visible_to(user, *, deleted: bool = False) -> QuerySet[App]:
    """Own apps, apps shared with everyone, project apps of the user's projects, and apps
    shared with the user or one of their projects (tapis/shares.py; all for admins).

    Deleted versions (a job used them, their owner deleted them) only with ``deleted=True``:
    what a resubmission of their jobs runs, never what a new submission or a list finds."""
    if not user or not user.is_authenticated:
        return App.objects.none()
    apps = App.objects.select_related("owner", "project")
    if not deleted:
        apps = apps.filter(deleted_at__isnull=True)
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


def app_get_visible(
    user, app_id: str, version: str | None = None, *, deleted: bool = False
) -> App | None:
    """The app with that id (and version; the newest one when None), if the user may see it;
    a deleted version only with ``deleted=True`` (resubmitting its jobs)."""
    apps = app_list_visible_to(user, deleted=deleted).filter(app_id=app_id)
    if version:
        return apps.filter(version=version).first()
    return apps.order_by("-created", "-id").first()


def app_can_change(user, app: App) -> bool:
    return app.owner_id == user.pk or user_is_admin(user)
