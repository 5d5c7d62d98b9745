"""How long a job will probably run, from how long similar jobs ran (for start estimates).

Estimates used to assume that every job runs to its maxDuration. Jobs rarely do: users set it
generously (GPULab's default is 2 weeks), and many runs end early, some in seconds. So the
estimate reads the history of run times (``RuntimeHistory``, built by the bridge from the runs
that ended lately), grouped by key, most specific first (``history_keys``):

1. the user's runs of the same job name (a training script resubmitted, a sweep's jobs);
2. the user's runs of the same image;
3. all the user's runs;
4. every run of the site.

The first key with at least ``MIN_SAMPLES`` runs decides. A job that has been running for a
while is past the shorter runs: only the runs longer than its run so far count, and when a
key has too few of those the next key is asked. When no key knows, the job is assumed to run
to its maxDuration (the only sure bound). Whatever the history, no job is assumed to run past
its maxDuration, when it is cancelled.

A *scenario* is a quantile of those run times: the estimate's start is simulated with every job
at its median, and its range with the 5th and 95th percentiles (``estimate.SCENARIOS``).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Mapping

from .model import HistoryKey, RuntimeHistory

# A key speaks for a job only with at least this many runs (fewer: the next key).
MIN_SAMPLES = 3
# The latest runs kept per key: old habits fade.
MAX_SAMPLES = 50


def history_keys(*, user: str, name: str, image: str) -> tuple[HistoryKey, ...]:
    """A job's keys, most specific first (see the module docstring)."""
    return (("name", user, name), ("image", user, image), ("user", user), ("site",))


def history_from_runs(
    runs: Iterable[tuple[tuple[HistoryKey, ...], float]],
    job_keys: Mapping[str, tuple[HistoryKey, ...]],
    *,
    max_samples: int = MAX_SAMPLES,
) -> RuntimeHistory:
    """A history from ended runs, latest first: ``(the run's keys, seconds it ran)``."""
    found: dict[HistoryKey, list[int]] = {}
    for keys, seconds in runs:
        for key in keys:
            kept = found.setdefault(key, [])
            if len(kept) < max_samples:
                kept.append(max(0, int(seconds)))
    return RuntimeHistory(
        samples={key: tuple(sorted(values)) for key, values in found.items()},
        job_keys=dict(job_keys),
    )


def quantile(ordered: tuple[int, ...], q: float) -> float:
    """The ``q`` quantile of ascending values, linearly interpolated (``q`` in [0, 1])."""
    if not ordered:
        raise ValueError("no values")
    position = q * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


class RunTimes:
    """Expected run times of one scenario (a quantile) over one history."""

    __slots__ = ("history", "q")

    def __init__(self, history: RuntimeHistory | None, q: float) -> None:
        self.history = history
        self.q = q

    def seconds(self, job_id: str, *, limit_s: float, elapsed_s: float = 0.0) -> float:
        """How long the job's run lasts in all (from its start), given it has run ``elapsed_s``
        already, at most ``limit_s`` (what its maxDuration leaves it)."""
        history = self.history
        if history is None:
            return limit_s
        for key in history.job_keys.get(job_id, ()):
            values = history.samples.get(key, ())
            longer = values[bisect_right(values, elapsed_s) :] if elapsed_s > 0 else values
            if len(longer) >= MIN_SAMPLES:
                return min(limit_s, max(elapsed_s, quantile(longer, self.q)))
        return limit_s


__all__ = ["MAX_SAMPLES", "MIN_SAMPLES", "RunTimes", "history_from_runs", "history_keys"]
