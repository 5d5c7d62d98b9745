from pathlib import Path

from django.apps import AppConfig
from django.db.backends.signals import connection_created
from django.db.models.signals import post_migrate, pre_save

from core.installation import make_private
from portal.schedules import schedule_refuse_unreadable, schedules_ensure


class PortalConfig(AppConfig):
    name = "portal"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # The periodic work (safety-net tick, reconcile) exists wherever workers run: every
        # `migrate` (which any deployment runs, and qcluster needs) makes sure of it.
        post_migrate.connect(_schedules_after_migrate, sender=self)
        connection_created.connect(_sqlite_file_private)
        from django_q.models import Schedule

        pre_save.connect(schedule_refuse_unreadable, sender=Schedule)


def _schedules_after_migrate(sender, using="default", **kwargs):
    schedules_ensure(using=using)


_private_checked: set[str] = set()


def _sqlite_file_private(sender, connection, **kwargs):
    """The SQLite file holds API tokens and registry credentials: 0600, once per process."""
    if connection.vendor != "sqlite":
        return
    name = str(connection.settings_dict["NAME"])
    if name in _private_checked or name.startswith("file:") or ":memory:" in name:
        return
    _private_checked.add(name)
    # SQLite gives its -wal/-shm/-journal files the database file's mode, but older ones stay.
    for suffix in ("", "-wal", "-shm", "-journal"):
        make_private(Path(name + suffix))
