"""Running jobs are cancelled when their run time (summed over restarts) reaches maxDuration."""

import pytest

from jobs.scheduler import Cancel, run_cycle

from .builders import HOUR, ago, queued, running, slave, snapshot, started


@pytest.mark.parametrize(
    ("started_s_ago", "run_before", "max_s", "cancelled"),
    [
        (2 * HOUR, 0, 2 * HOUR, True),
        (2 * HOUR - 1, 0, 2 * HOUR, False),
        (HOUR, HOUR, 2 * HOUR, True),  # earlier runs count
        (HOUR, HOUR - 1, 2 * HOUR, False),
        (10 * HOUR, 0, 2 * HOUR, True),
    ],
)
def test_cancel_at_max_duration(started_s_ago, run_before, max_s, cancelled):
    job = running(
        "r", "s1", gpu_ids=(0,), started=ago(started_s_ago), run_before=run_before, max_s=max_s
    )
    result = run_cycle(snapshot(slaves=[slave("s1")], running=[job]))
    expected = (Cancel("r", "maxDuration of 2 hours reached"),) if cancelled else ()
    assert result.cancels == expected


def test_halting_job_is_not_cancelled_again():
    job = running("r", "s1", started=ago(10 * HOUR), max_s=HOUR, halting=True)
    assert not run_cycle(snapshot(slaves=[slave("s1")], running=[job])).cancels


def test_cancelled_job_keeps_its_room_in_this_cycle():
    job = running("r", "s1", gpu_ids=(0, 1, 2, 3), started=ago(10 * HOUR), max_s=HOUR)
    result = run_cycle(snapshot(slaves=[slave("s1")], running=[job], queued=[queued("q")]))
    assert result.cancels and not started(result)
    assert result.explanations["q"] == ("waiting for 1 ending job(s) on s1 to free room",)
