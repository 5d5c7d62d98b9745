"""Every process of the portal stops within its deadline of SIGTERM, with its children.

django-q2's own stop waits for the pusher, then for each worker's task to end (a reconcile may
run ten minutes), then for the monitor: a SIGTERM can wait for good, and a parent killed
meanwhile leaves its workers running as orphans. ``stop_deadline_install`` keeps the graceful
stop and bounds it: when the deadline passes, every descendant still alive is killed and the
process exits. Whatever a killed task was doing is recovered like any crash (each task is
idempotent, reconcile and recovery repair the rest: docs/runtime.md).
"""

import logging
import os
import signal
import threading

import psutil

log = logging.getLogger(__name__)


def descendants_kill(*, pid: int | None = None, sig: int = signal.SIGKILL) -> int:
    """Send ``sig`` to every living descendant of ``pid`` (this process); returns how many."""
    try:
        children = psutil.Process(pid or os.getpid()).children(recursive=True)
    except psutil.NoSuchProcess:
        return 0
    sent = 0
    for child in children:
        try:
            child.send_signal(sig)
            sent += 1
        except psutil.NoSuchProcess:
            pass
    return sent


def stop_deadline_install(*, deadline_s: float, signals=(signal.SIGTERM, signal.SIGINT)) -> None:
    """Wrap the current handlers of ``signals``: the first signal starts a timer that, after
    ``deadline_s``, kills every descendant and ends this process (exit status 0: a stop that
    was asked for). Call it after the graceful handlers are installed."""
    started = threading.Event()

    def expire() -> None:
        killed = descendants_kill()
        log.warning("stop took longer than %.0f s: killed %d child processes", deadline_s, killed)
        os._exit(0)

    for signum in signals:
        graceful = signal.getsignal(signum)

        def handler(received, frame, graceful=graceful):
            if not started.is_set():
                started.set()
                timer = threading.Timer(deadline_s, expire)
                timer.daemon = True
                timer.start()
            if callable(graceful):
                graceful(received, frame)
            elif graceful == signal.SIG_DFL:
                raise SystemExit(0)

        signal.signal(signum, handler)
