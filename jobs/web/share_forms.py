"""The share form of the job page and of the app page (tapis): read it, call the service, say
how it went. The services (``jobs.user_actions.shares``, ``tapis.shares``) hold the rules."""

from __future__ import annotations

from django.contrib import messages

from core.errors import ServiceError
from jobs.user_actions.shares import share_grantee_from_form


def share_add_from_form(request, *, create, what: str) -> None:
    """``create(grantee_user=..., grantee_project=...)`` for the grantee the form names."""
    try:
        grantee_user, grantee_project, label = share_grantee_from_form(request.POST)
        create(grantee_user=grantee_user, grantee_project=grantee_project)
    except ServiceError as error:
        messages.error(request, f"Share failed: {error}")
    else:
        messages.success(request, f"{what} shared read-only with {label}.")


def share_revoke_from_form(request, share, *, revoke) -> None:
    """``revoke(share=share)``; ``share`` None (not a share of this page's object) is refused."""
    try:
        if share is None:
            raise ServiceError("no such share")
        revoke(share=share)
    except ServiceError as error:
        messages.error(request, f"Revoke failed: {error}")
    else:
        messages.success(request, "Share revoked.")
