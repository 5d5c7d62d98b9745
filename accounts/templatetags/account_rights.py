"""What the signed-in user may do, for templates that offer an action only to those who can
take it (Create Job, Clone, Resubmit) and tell the others what to ask for."""

from django import template

from accounts.models import Membership
from accounts.permissions import may_submit_to_any_project

register = template.Library()


@register.filter
def may_submit(user) -> bool:
    """True when ``user`` can submit a job somewhere: a member of a project, or allowed to
    submit in any project (job_submit refuses everyone else)."""
    if user is None or not user.is_authenticated or not user.is_active:
        return False
    if may_submit_to_any_project(user):
        return True
    # Cached on the user object: a page asks once per button.
    cached = getattr(user, "_ui_may_submit", None)
    if cached is None:
        cached = Membership.objects.filter(user=user).exists()
        user._ui_may_submit = cached
    return cached


@register.simple_tag
def admin_email() -> str:
    """Where a user without a project can write (settings.PORTAL_ADMIN_EMAIL)."""
    from django.conf import settings

    return settings.PORTAL_ADMIN_EMAIL
