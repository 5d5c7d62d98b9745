"""A liveness beat for long runtime work: the scheduler tick's lease and a job's launch, stop or
halt. A worker killed with ``kill -9`` stops beating, so others can tell a dead holder from a
slow one within seconds (``PORTAL_TICK_LEASE_S``, ``PORTAL_RECOVERY_GRACE_S``) instead of
waiting for django-q2's task timeout.
"""

import logging
import threading
from collections.abc import Callable

from django.db import connection

log = logging.getLogger(__name__)


class Heartbeat:
    """``with Heartbeat(beat, interval_s):`` calls ``beat()`` every ``interval_s`` seconds in a
    thread while the block runs. The first beat comes after one interval (the caller wrote the
    first stamp when it claimed the work), so short work never starts a database write."""

    def __init__(self, beat: Callable[[], object], interval_s: float):
        self.beat = beat
        self.interval_s = max(0.2, interval_s)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="heartbeat", daemon=True)

    def __enter__(self) -> "Heartbeat":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        # Not forever: a beat may be waiting for a database lock that the caller's own
        # transaction holds (SQLite). A late beat matches nothing (the lease's holder or the
        # job's status has changed) or renews a claim that is still the caller's.
        self._thread.join(timeout=1.0)

    def _run(self) -> None:
        try:
            while not self._stop.wait(self.interval_s):
                try:
                    self.beat()
                except Exception:  # a missed beat is survivable; a dead thread is not
                    log.warning("heartbeat failed", exc_info=True)
        finally:
            connection.close()  # this thread's own connection
