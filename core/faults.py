"""Fault drills: ``PORTAL_TEST_CRASH_AT=<point>`` makes the process group die by SIGKILL at that
named point, as a ``kill -9`` of the q cluster would (tests/integration/test_fault_drills.py).

Read here only; unset (always, outside the drills) every point is a no-op. Points:
``after_assign`` (ASSIGNED committed, launch not yet enqueued), ``after_starting`` (STARTING
committed, no container yet), ``during_tick`` (lease taken, nothing applied), ``during_halt``
(HALTING committed, SIGUSR1 not yet sent), ``during_stop`` (CANCELLING, the stop claimed, SIGTERM
not yet sent).
"""

import os
import signal


def crash_point(name: str) -> None:
    if os.environ.get("PORTAL_TEST_CRASH_AT") == name:
        os.killpg(os.getpgid(0), signal.SIGKILL)
