"""django-q2's ``qcluster`` with the portal's two guarantees around it.

- It stops within PORTAL_STOP_DEADLINE_S of SIGTERM or SIGINT, children included
  (portal/stopping.py): django-q2 alone waits for every running task to end.
- A schedule django-q2 cannot read is set aside at start and every minute after
  (portal/schedules.py): one such row otherwise stops every periodic task of the site.
- A task queued under the path it had before it moved to another app still runs, and stored
  schedules get the new paths (portal/moved_tasks.py).

It replaces django-q2's command of the same name ("portal" comes first in INSTALLED_APPS), so
``manage.py qcluster`` in the systemd unit, run_portal and the docs is this one.
"""

import logging
import os
import threading

from django.conf import settings
from django.db import connections
from django_q.cluster import Cluster
from django_q.management.commands.qcluster import Command as DjangoQCommand

from core.connections import connections_release
from portal.moved_tasks import moved_schedules_rewrite, moved_tasks_alias
from portal.schedules import schedules_set_aside_unreadable
from portal.stopping import stop_deadline_install

log = logging.getLogger(__name__)
SET_ASIDE_EVERY_S = 60


def _set_aside_forever(stop: threading.Event) -> None:
    while not stop.wait(SET_ASIDE_EVERY_S):
        try:
            schedules_set_aside_unreadable()
        except Exception:  # the database may be briefly unreachable: next minute
            log.exception("checking the schedules")
        finally:
            connections_release()


class Command(DjangoQCommand):
    # Not here: Django's system checks cost a second or more of every start, and a q cluster
    # started after a crash recovers the jobs only once it runs (docs/runtime.md, Recovery).
    # They run where a deployment starts: in `migrate` (the web unit's ExecStartPre) and in
    # `run_portal`'s own start, and `manage.py check` runs them in CI.
    requires_system_checks: list[str] = []

    def handle(self, *args, **options):
        settings.SECRET_KEY  # noqa: B018 (django-q2 signs its tasks with it: fail early)
        if options.get("cluster_name"):
            os.environ["Q_CLUSTER_NAME"] = options["cluster_name"]
        moved_tasks_alias()  # before the fork: the workers inherit the old names
        moved_schedules_rewrite()
        schedules_set_aside_unreadable()
        connections.close_all()  # nothing open in this process while it forks the cluster
        stop = threading.Event()
        threading.Thread(target=_set_aside_forever, args=(stop,), daemon=True).start()
        cluster = Cluster()  # installs django-q2's graceful SIGTERM/SIGINT handlers
        stop_deadline_install(deadline_s=settings.PORTAL_STOP_DEADLINE_S)
        try:
            cluster.start()
            if options.get("run_once", False):
                cluster.stop()
            else:
                # django-q2 leaves this to multiprocessing's exit handler; waiting here keeps
                # the set-aside thread alive for as long as the cluster runs.
                cluster.sentinel.join()
        finally:
            stop.set()
