"""Sharing an app version read-only with a user or a project (docs/tapis.md, "App shares").

The grantee sees the app and submits jobs from it (``tapis.selectors.app_list_visible_to`` is
the one visibility rule); it cannot change or delete it (``app_can_change`` ignores shares).
The grantee rule is the job shares' ``share_refusal``; its owner check admits admins here.
"""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.db.models import QuerySet
from django.utils import timezone

from accounts.permissions import user_is_admin
from core.errors import Conflict, NotAllowed, ServiceError
from jobs.user_actions.shares import share_refusal
from tapis.models import App, AppShare
from tapis.selectors import app_can_change

OWNER_ONLY = "only the app's owner or an admin shares it"


def app_share_create(*, app: App, user, grantee_user=None, grantee_project=None) -> AppShare:
    """Share ``app`` read-only with one user or one project (409 when already shared)."""
    why = share_refusal(
        owner=app.owner, user=user, grantee_user=grantee_user, grantee_project=grantee_project
    )
    if why == "only the owner shares it":
        why = None if user_is_admin(user) else OWNER_ONLY
    if why is not None:
        raise (NotAllowed if why.startswith("only") else ServiceError)(why)
    try:
        with transaction.atomic():
            return AppShare.objects.create(
                app=app,
                grantee_user=grantee_user,
                grantee_project=grantee_project,
                created_by=user,
                created=timezone.now(),
            )
    except IntegrityError:
        raise Conflict("the app is already shared with this grantee") from None


def app_share_revoke(*, share: AppShare, user) -> None:
    """Remove a share: the grantee loses the app at once (jobs it ran stay theirs)."""
    if not (user and user.is_authenticated and app_can_change(user, share.app)):
        raise NotAllowed("only the app's owner or an admin revokes its shares")
    share.delete()


def app_shares_list(*, app: App, user) -> QuerySet[AppShare]:
    if not (user and user.is_authenticated and app_can_change(user, app)):
        raise NotAllowed("only the app's owner or an admin lists its shares")
    return AppShare.objects.filter(app=app).select_related(
        "grantee_user", "grantee_project", "created_by"
    )
