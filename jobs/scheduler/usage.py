"""Fair-share usage arithmetic (pure; the bridge stores the numbers).

Usage is "weighted GPU-seconds": a running job adds ``rate`` per second, where the rate weighs its
GPUs, CPUs and memory (:func:`usage_rate`), and everything accrued so far decays exponentially
with the configured half-life. :func:`accrue` integrates the decay exactly, so updating every
minute or once an hour gives the same number.
"""

from __future__ import annotations

import math

from .model import SchedulerConfig

_LN2 = math.log(2.0)


def decayed(value: float, elapsed_s: float, half_life_s: float) -> float:
    """``value`` after ``elapsed_s`` seconds of decay (nothing happens for elapsed <= 0)."""
    if half_life_s <= 0:
        raise ValueError("half_life_s must be > 0")
    if elapsed_s <= 0:
        return value
    return value * math.pow(2.0, -elapsed_s / half_life_s)


def usage_rate(*, gpus: int, cpus: int, memory_gb: float, config: SchedulerConfig) -> float:
    """Usage per second of one job holding these resources."""
    return gpus * config.gpu_weight + cpus * config.cpu_weight + memory_gb * config.mem_gb_weight


def accrue(value: float, elapsed_s: float, *, rate: float, half_life_s: float) -> float:
    """Decay ``value`` over ``elapsed_s`` while adding ``rate`` per second (itself decaying).

    ``rate`` is the sum of :func:`usage_rate` over the user's jobs during the interval. The result
    is exact: ``accrue(accrue(v, a), b) == accrue(v, a + b)`` for a constant rate.
    """
    if half_life_s <= 0:
        raise ValueError("half_life_s must be > 0")
    if elapsed_s <= 0:
        return value
    factor = math.pow(2.0, -elapsed_s / half_life_s)
    # integral over [0, t] of rate * 2^(-(t - s)/h) ds = rate * h / ln2 * (1 - 2^(-t/h))
    return value * factor + rate * half_life_s / _LN2 * (1.0 - factor)
