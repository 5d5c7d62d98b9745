"""Django's ModelBackend with a user's permissions read in one query.

``user.has_perm`` (accounts.permissions.user_has_power) is asked on most API requests of users
who are not superusers; Django's backend answers it with two ORM queries (the user's own
permissions, then their groups'), whose building cost a list page more than running them. The
answer is the same set of ``"app_label.codename"`` strings, cached on the user object as
Django caches it.
"""

import functools

from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import Group, Permission
from django.contrib.contenttypes.models import ContentType
from django.db import connection


@functools.cache  # the same text for the site's one database, asked on most requests
def _permissions_sql() -> str:
    """The user's own permissions and their groups' (the user's id twice)."""
    q = connection.ops.quote_name
    user_model = get_user_model()

    def table_and_columns(through, *fields):
        meta = through._meta
        return q(meta.db_table), *(q(meta.get_field(f).column) for f in fields)

    user_perms, up_user, up_perm = table_and_columns(
        user_model.user_permissions.through, user_model._meta.model_name, "permission"
    )
    user_groups, ug_user, ug_group = table_and_columns(
        user_model.groups.through, user_model._meta.model_name, "group"
    )
    group_perms, gp_group, gp_perm = table_and_columns(
        Group.permissions.through, "group", "permission"
    )
    permission, content_type = q(Permission._meta.db_table), q(ContentType._meta.db_table)
    return (
        f"SELECT ct.{q('app_label')}, p.{q('codename')} FROM {permission} p"
        f" JOIN {content_type} ct ON ct.{q('id')} = p.{q('content_type_id')}"
        f" WHERE p.{q('id')} IN (SELECT {up_perm} FROM {user_perms} WHERE {up_user} = %s"
        f" UNION SELECT gp.{gp_perm} FROM {group_perms} gp JOIN {user_groups} ug"
        f" ON ug.{ug_group} = gp.{gp_group} WHERE ug.{ug_user} = %s)"
    )


class PortalModelBackend(ModelBackend):
    def get_all_permissions(self, user_obj, obj=None):
        if (
            not user_obj.is_active
            or user_obj.is_anonymous
            or obj is not None
            or user_obj.is_superuser  # Django's own path: every permission
        ):
            return super().get_all_permissions(user_obj, obj=obj)
        if not hasattr(user_obj, "_perm_cache"):
            with connection.cursor() as cursor:
                cursor.execute(_permissions_sql(), [user_obj.pk, user_obj.pk])
                user_obj._perm_cache = {f"{app}.{codename}" for app, codename in cursor.fetchall()}
        return user_obj._perm_cache
