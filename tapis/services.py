"""App services: create, update (only while no job used the version), delete (a used version
is hidden, not removed: its jobs keep its content, and its id and version stay taken)."""

from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts.models import Membership, Project
from core.errors import Conflict, NotAllowed
from jobs.spec import FieldError, SpecError
from tapis.definitions import app_definition_parse
from tapis.models import App
from tapis.selectors import app_can_change


def _project(user, name: str) -> Project | None:
    if not name:
        return None
    project = Project.objects.filter(name=name).first()
    if project is None:
        raise SpecError([FieldError("project", f"no project {name!r}")])
    if not Membership.objects.filter(user=user, project=project).exists():
        raise SpecError([FieldError("project", f"you are not a member of project {name!r}")])
    return project


def app_create(*, user, definition) -> App:
    """A new app version owned by ``user``; SpecError (400, every field) for a bad definition,
    Conflict (409) when that id and version exist."""
    fields = app_definition_parse(definition)
    fields["project"] = _project(user, fields["project"])
    taken = App.objects.filter(app_id=fields["app_id"], version=fields["version"]).first()
    if taken is not None:
        raise Conflict(_taken(taken))
    try:
        with transaction.atomic():
            return App.objects.create(owner=user, **fields)
    except IntegrityError:  # created meanwhile by someone else
        raise Conflict(
            f"app {fields['app_id']} version {fields['version']} exists already"
        ) from None


def app_update(*, app: App, user, definition) -> App:
    """Replace the definition of an unused version (id and version cannot change)."""
    if not app_can_change(user, app):
        raise NotAllowed("only the app's owner or an admin may change it")
    fields = app_definition_parse(definition)
    errors = [
        FieldError(key, f"cannot change ({getattr(app, attr)!r}); create a new version")
        for key, attr in (("id", "app_id"), ("version", "version"))
        if fields[attr] != getattr(app, attr)
    ]
    if errors:
        raise SpecError(errors)
    fields["project"] = _project(user, fields["project"])
    with transaction.atomic():
        # Compare-and-swap on locked: a job submitted meanwhile wins.
        if App.objects.filter(pk=app.pk, locked=False).update(**fields) != 1:
            raise Conflict(f"app {app} was used by a job: it can no longer change")
    app.refresh_from_db()
    return app


def _taken(app: App) -> str:
    if app.deleted_at is not None:
        return (
            f"app {app.app_id} version {app.version} was deleted after jobs ran it: its id and "
            "version are kept for those jobs and cannot be created again; choose a new version"
        )
    return f"app {app.app_id} version {app.version} exists already"


def app_delete(*, app: App, user, now=None) -> None:
    """An unused version goes; a version a job used is only hidden (``deleted_at``): new
    submissions and lists no longer find it, while its jobs' history and resubmissions keep its
    content, and its id and version can never be created again with other content."""
    if not app_can_change(user, app):
        raise NotAllowed("only the app's owner or an admin may delete it")
    now = now or timezone.now()
    with transaction.atomic():
        # A submit locks the version in its own transaction (compare-and-swap on locked):
        # either it locked first and the version is hidden, or the delete wins and it is gone.
        if App.objects.filter(pk=app.pk, locked=True).update(deleted_at=now):
            return
        removed, _ = App.objects.filter(pk=app.pk, locked=False).delete()
        if not removed:  # a job locked it between the two statements
            App.objects.filter(pk=app.pk).update(deleted_at=now)
