"""Fair-share usage arithmetic."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jobs.scheduler import SchedulerConfig, accrue, decayed, usage_rate

WEEK = 7 * 86400.0


@pytest.mark.parametrize(
    ("value", "elapsed", "expected"),
    [(100.0, 0, 100.0), (100.0, WEEK, 50.0), (100.0, 2 * WEEK, 25.0), (100.0, -5, 100.0)],
)
def test_decayed(value, elapsed, expected):
    assert decayed(value, elapsed, WEEK) == pytest.approx(expected)


def test_half_life_must_be_positive():
    with pytest.raises(ValueError):
        decayed(1.0, 1.0, 0)
    with pytest.raises(ValueError):
        accrue(1.0, 1.0, rate=1.0, half_life_s=-1)


def test_usage_rate_weights():
    config = SchedulerConfig()
    assert usage_rate(gpus=2, cpus=10, memory_gb=100, config=config) == pytest.approx(2 + 0.5 + 1.0)


def test_accrue_short_interval_is_rate_times_time():
    assert accrue(0.0, 60, rate=2.0, half_life_s=WEEK) == pytest.approx(120.0, rel=1e-4)


def test_accrue_converges_to_steady_state():
    steady = 1.0 * WEEK / math.log(2)
    assert accrue(0.0, 100 * WEEK, rate=1.0, half_life_s=WEEK) == pytest.approx(steady)


@given(
    value=st.floats(0, 1e9),
    first=st.floats(0, 1e7),
    second=st.floats(0, 1e7),
    rate=st.floats(0, 100),
)
def test_accrue_is_independent_of_tick_length(value, first, second, rate):
    stepwise = accrue(
        accrue(value, first, rate=rate, half_life_s=WEEK), second, rate=rate, half_life_s=WEEK
    )
    at_once = accrue(value, first + second, rate=rate, half_life_s=WEEK)
    assert stepwise == pytest.approx(at_once, rel=1e-9, abs=1e-6)
