"""The capability stamp: changed whenever what the slaves can run may have changed.

What counts: a Slave, Gpu or Cluster row saved or deleted, a cluster's owner projects changed,
a project renamed (private clusters name their owners). Model signals cover ``save()`` and
``delete()`` (the admin, services, tests); code that writes those tables with
``QuerySet.update()`` or ``bulk_create()`` (which send no signals) calls
:func:`capabilities_changed` itself, after the write and in the same transaction where it can.
A new stamp is random, not a counter, so a rolled-back or flushed database never brings back a
stamp that a process already cached other data under.
"""

import secrets

from django.db import connection
from django.db.models.signals import m2m_changed, post_delete, post_save

from clusters.models import CapabilityStamp, Cluster, Gpu, Slave


def capabilities_changed() -> None:
    stamp = secrets.token_hex(16)
    if not CapabilityStamp.objects.filter(pk=1).update(stamp=stamp):
        CapabilityStamp.objects.update_or_create(pk=1, defaults={"stamp": stamp})


def capability_stamp() -> str | None:
    """The current stamp (None when the row is missing: then nothing may be cached)."""
    # Plain SQL: every submission reads it, and the ORM would spend longer building the query
    # than the database spends answering it.
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT stamp FROM {CapabilityStamp._meta.db_table} WHERE id = 1")
        row = cursor.fetchone()
    return row[0] if row else None


def _changed(sender, **kwargs) -> None:
    if kwargs.get("raw"):
        return  # loaddata: fixtures bring their own rows
    capabilities_changed()


def _owners_changed(sender, action, **kwargs) -> None:
    if action in {"post_add", "post_remove", "post_clear"}:
        capabilities_changed()


def connect() -> None:
    for model in (Slave, Gpu, Cluster, "accounts.Project"):
        post_save.connect(_changed, sender=model, dispatch_uid=f"capabilities-save-{model}")
        post_delete.connect(_changed, sender=model, dispatch_uid=f"capabilities-del-{model}")
    m2m_changed.connect(
        _owners_changed, sender=Cluster.owner_projects.through, dispatch_uid="capabilities-m2m"
    )
