"""A liveness beat for long runtime work: the scheduler tick's lease and a job's launch, stop or
halt. A worker killed with ``kill -9`` stops beating, so others can tell a dead holder from a
slow one within seconds (``PORTAL_TICK_LEASE_S``, ``PORTAL_RECOVERY_GRACE_S``) instead of
waiting for django-q2's task timeout.

A claim also names its holder (``holder_name``: node, pid and start of the worker process).
A holder on this same node can be judged at once (``holder_dead``): when its process is gone,
or its pid now belongs to another process, its claim is dead now, not after the grace period.
A holder on another node, or named in a form this code cannot read, is judged by its beat.
"""

import functools
import hashlib
import logging
import os
import re
import socket
import threading
from collections.abc import Callable
from pathlib import Path

import psutil
from django.db import connection

log = logging.getLogger(__name__)
_names: dict[int, str] = {}  # by pid: a forked worker names itself, not its parent


@functools.cache
def _node() -> str:
    """This host and pid namespace: pids are comparable only between processes that share
    both. The host name for people, a digest of the host name, the kernel's boot id (random
    per boot: another machine, or this one rebooted, never matches) and the pid namespace
    (another container on the same kernel) for the match. At most 27 characters, no colon."""
    host = socket.gethostname()
    parts = [host]
    for read in (
        lambda: Path("/proc/sys/kernel/random/boot_id").read_text().strip(),
        lambda: str(os.stat("/proc/self/ns/pid").st_ino),
    ):
        try:
            parts.append(read())
        except OSError:
            parts.append("")
    digest = hashlib.sha256("\0".join(parts).encode()).hexdigest()[:10]
    label = re.sub(r"[^A-Za-z0-9.-]", "", host.split(".")[0])[:16]
    return f"{label}~{digest}"


def _started(pid: int) -> int | None:
    """When process ``pid`` started, in hundredths of a second since boot (unchanged by clock
    steps: both times below move together); None when it is gone or a zombie."""
    try:
        boot = psutil.boot_time()
        process = psutil.Process(pid)
        if process.status() in (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD):
            return None
        return round((process.create_time() - boot) * 100)
    except psutil.NoSuchProcess:  # ZombieProcess is one
        return None


def process_name(pid: int) -> str:
    """Process ``pid`` of this node as ``node:pid:start`` (at most 48 characters): never the
    name of another process, even one that gets the same pid later."""
    return f"{_node()}:{pid}:{_started(pid)}"


def holder_name() -> str:
    """This process as the holder of a claim (``process_name``)."""
    pid = os.getpid()
    if pid not in _names:
        _names[pid] = process_name(pid)
    return _names[pid]


def holder_here(holder: str) -> bool:
    """The holder ran on this node (same host and pid namespace): ``holder_dead`` can judge it."""
    return (holder or "").partition(":")[0] == _node()


def holder_dead(holder: str) -> bool:
    """The claim's holder ran on this node and its process is gone (or the pid is another
    process now): whatever it claimed is nobody's work any more. False when that cannot be
    told here (another node, an unreadable name, a process this user may not inspect)."""
    node, _, rest = (holder or "").partition(":")
    pid, _, start = rest.partition(":")
    start = start.partition(":")[0]  # a tick lease adds its own tail
    if node != _node() or not pid.isdigit() or not start.isdigit():
        return False
    try:
        now_started = _started(int(pid))
    except (psutil.Error, OSError, ValueError):  # AccessDenied: cannot tell, so alive
        return False
    # Hundredths of a second since boot: the same process reads the same value (a tolerance of
    # one for rounding); a new process with a reused pid started later.
    return now_started is None or abs(now_started - int(start)) > 1


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
