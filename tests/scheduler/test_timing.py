"""notBefore / notAfter for queued jobs, and duration formatting."""

from datetime import UTC, datetime

import pytest

from jobs.scheduler import run_cycle
from jobs.scheduler.timing import format_duration

from .builders import HOUR, NOW, failed, later, queued, slave, snapshot, started


def test_not_before_in_future_waits_with_explanation():
    job = queued("j", not_before=datetime(2026, 12, 1, 9, 0, tzinfo=UTC))
    result = run_cycle(snapshot(slaves=[slave("s1")], queued=[job]))
    assert not result.decisions
    assert result.explanations["j"] == ("waiting for notBefore 2026-12-01T09:00:00Z",)


def test_not_before_reached_starts():
    job = queued("j", not_before=NOW)
    assert "j" in started(run_cycle(snapshot(slaves=[slave("s1")], queued=[job])))


def test_not_after_passed_fails():
    job = queued("j", not_after=NOW)
    result = run_cycle(snapshot(slaves=[slave("s1")], queued=[job]))
    assert failed(result) == {"j": "notAfter 2026-06-01T12:00:00Z passed while queued"}
    assert not result.starts


def test_not_after_in_future_starts():
    job = queued("j", not_after=later(HOUR))
    assert "j" in started(run_cycle(snapshot(slaves=[slave("s1")], queued=[job])))


def test_naive_now_is_refused():
    with pytest.raises(ValueError):
        run_cycle(snapshot(now=datetime(2026, 1, 1)))


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0 seconds"),
        (1, "1 second"),
        (60, "1 minute"),
        (7200, "2 hours"),
        (5400, "1 hour 30 minutes"),
        (86400, "1 day"),
        (14 * 86400, "2 weeks"),
        (3661, "1 hour 1 minute 1 second"),
    ],
)
def test_format_duration(seconds, text):
    assert format_duration(seconds) == text
