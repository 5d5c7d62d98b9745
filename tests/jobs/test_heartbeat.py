"""The heartbeat thread: beats while the block runs, never before one interval, stops after."""

import time

from jobs.execution.heartbeat import Heartbeat


def test_beats_while_the_work_runs_and_stops_after():
    beats = []
    with Heartbeat(lambda: beats.append(time.monotonic()), 0.2):
        time.sleep(0.75)
    counted = len(beats)
    time.sleep(0.5)
    assert 2 <= counted <= 4 and len(beats) == counted


def test_short_work_never_beats():
    beats = []
    with Heartbeat(lambda: beats.append(1), 0.5):
        pass
    assert beats == []


def test_a_failing_beat_does_not_stop_the_next():
    calls = []

    def beat():
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("database is locked")

    with Heartbeat(beat, 0.2):
        time.sleep(0.55)
    assert len(calls) >= 2
