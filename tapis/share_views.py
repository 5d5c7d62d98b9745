"""The app page's share form (owner or admin): add and revoke read-only shares
(services: ``tapis.shares``), the same form as the job page's."""

from __future__ import annotations

from functools import partial

from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from jobs.web.forms import share_add_from_form, share_revoke_from_form
from tapis.models import App, AppShare
from tapis.selectors import app_get_visible
from tapis.shares import app_share_create, app_share_revoke


def _app(user, app_id: str, version: str) -> App:
    app = app_get_visible(user, app_id, version)
    if app is None:
        raise Http404("no such app")
    return app


@login_required
@require_POST
def app_share_add(request, app_id: str, version: str):
    app = _app(request.user, app_id, version)
    share_add_from_form(
        request, what="App", create=partial(app_share_create, app=app, user=request.user)
    )
    return redirect("apps:detail", app_id=app.app_id, version=app.version)


@login_required
@require_POST
def app_share_remove(request, app_id: str, version: str, share_id: int):
    app = _app(request.user, app_id, version)
    share = AppShare.objects.filter(app=app, pk=share_id).select_related("app").first()
    share_revoke_from_form(request, share, revoke=partial(app_share_revoke, user=request.user))
    return redirect("apps:detail", app_id=app.app_id, version=app.version)
