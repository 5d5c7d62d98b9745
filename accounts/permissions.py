"""Who holds admin powers outside the Django admin: the ONE place that answers it.

Powers follow Django's own model: a superuser has every power, anyone else exactly the model
permissions given to them or their groups in the admin (Users > permissions). ``is_staff`` alone
grants nothing here: it only lets a person into the admin site, where Django shows them what
their permissions allow. Views, API, services and selectors ask these functions; none of them
reads ``is_staff`` or ``is_superuser`` itself.

| power                                   | permission                    |
|-----------------------------------------|-------------------------------|
| see every job in full, every project    | ``jobs.view_job``             |
| submit into a project one is not in     | ``jobs.add_job``              |
| cancel/halt/hold/release others' jobs   | ``jobs.change_job``           |
| delete others' jobs, ``real``/``force`` | ``jobs.delete_job``           |
| see reservations' projects and users    | ``reservations.view_reservation`` |
| create / change / delete reservations   | ``reservations.add_/change_/delete_reservation`` |
| list every project                      | ``accounts.view_project``       |
| see a slave's raw engine error          | ``clusters.view_slave``       |

The admin's internal tables (task queue, leases, usage rows, caches) are for superusers only:
their ModelAdmins mix in ``SuperuserOnlyAdmin``.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the mixin's super() is the ModelAdmin it is mixed into
    from django.contrib import admin

    _AdminBase = admin.ModelAdmin[Any]
else:
    _AdminBase = object

JOBS_VIEW_ALL = "jobs.view_job"
JOBS_SUBMIT_ANY_PROJECT = "jobs.add_job"
JOBS_ACT_ALL = "jobs.change_job"
JOBS_DELETE_ALL = "jobs.delete_job"
RESERVATIONS_VIEW_ALL = "reservations.view_reservation"
RESERVATION_VERBS = {
    "add": "reservations.add_reservation",
    "change": "reservations.change_reservation",
    "delete": "reservations.delete_reservation",
}
PROJECTS_VIEW_ALL = "accounts.view_project"
SLAVES_VIEW_ENGINE_ERRORS = "clusters.view_slave"


def user_has_power(user, permission: str) -> bool:
    """True for an active superuser, or an active user holding ``permission`` (directly or
    through a group). Django's ModelBackend answers False for inactive users."""
    return bool(user is not None and user.is_authenticated and user.has_perm(permission))


def user_is_admin(user) -> bool:
    """A full admin: an active superuser. Only for what no single permission names (the
    ``is_admin`` flag of /me); everything else asks ``user_has_power``."""
    return bool(user is not None and user.is_authenticated and user.is_active and user.is_superuser)


def may_view_all_jobs(user) -> bool:
    return user_has_power(user, JOBS_VIEW_ALL)


def may_submit_to_any_project(user) -> bool:
    return user_has_power(user, JOBS_SUBMIT_ANY_PROJECT)


def may_act_on_all_jobs(user) -> bool:
    return user_has_power(user, JOBS_ACT_ALL)


def may_delete_all_jobs(user) -> bool:
    return user_has_power(user, JOBS_DELETE_ALL)


def may_view_all_reservations(user) -> bool:
    return user_has_power(user, RESERVATIONS_VIEW_ALL)


def may_manage_reservations(user, verb: str = "add") -> bool:
    """``verb`` is "add", "change" or "delete"."""
    return user_has_power(user, RESERVATION_VERBS[verb])


def may_view_all_projects(user) -> bool:
    return user_has_power(user, PROJECTS_VIEW_ALL)


def may_view_engine_errors(user) -> bool:
    """The raw error of an unreachable engine names internal addresses: admins only."""
    return user_has_power(user, SLAVES_VIEW_ENGINE_ERRORS)


class SuperuserOnlyAdmin(_AdminBase):
    """Mixed into a ModelAdmin (first) of a table that only the site's operators should see
    (task queue, scheduler lease, usage rows, caches): hidden from every other staff user,
    whatever model permissions they were given, since editing them breaks the portal."""

    def _superuser(self, request) -> bool:
        return user_is_admin(request.user)

    def has_module_permission(self, request):
        return self._superuser(request) and super().has_module_permission(request)

    def has_view_permission(self, request, obj=None):
        return self._superuser(request) and super().has_view_permission(request, obj)

    def has_add_permission(self, request, *args):
        return self._superuser(request) and super().has_add_permission(request, *args)

    def has_change_permission(self, request, obj=None):
        return self._superuser(request) and super().has_change_permission(request, obj)

    def has_delete_permission(self, request, obj=None):
        return self._superuser(request) and super().has_delete_permission(request, obj)
