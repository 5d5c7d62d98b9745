"""Live › Clusters' "GPUs held" against the jobs that held GPUs (issue 28 item 3).

The figure peaked at 9 on a 2-GPU cluster: every job with a sample in a 10-minute bucket was
counted whole, so jobs that ran one after the other on the same GPUs added up. Here the runs
are drawn by hypothesis as lanes (one per GPU, runs one after another on it), and each bucket's
figure is compared with a second-by-second count of the GPUs held. No database: the pure
``held_gpus_per_bucket``.
"""

from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from jobs.execution.metrics import held_gpus_per_bucket

SINCE = datetime(2026, 11, 25, 20, 0, tzinfo=UTC)
BUCKET_S = 60
WINDOW_S = 5 * BUCKET_S
GPUS = 2

# One lane per GPU: (gap before, length) pairs in whole seconds, so counting per second is exact.
lane = st.lists(st.tuples(st.integers(0, 90), st.integers(1, 120)), max_size=8)


def runs_of(lanes, *, offset: int):
    runs = []
    for gaps in lanes:
        t = offset
        for gap, length in gaps:
            t += gap
            start = SINCE + timedelta(seconds=t)
            runs.append((start, start + timedelta(seconds=length), 1))
            t += length
    return runs


def held_at(runs, second: int) -> int:
    at = SINCE + timedelta(seconds=second)
    return sum(gpus for start, end, gpus in runs if start <= at < end)


@settings(max_examples=150, deadline=None)
@given(lanes=st.lists(lane, min_size=GPUS, max_size=GPUS), offset=st.integers(-150, 150))
def test_held_is_the_mean_of_what_the_runs_held_and_never_more_than_the_cluster(lanes, offset):
    runs = runs_of(lanes, offset=offset)
    until = SINCE + timedelta(seconds=WINDOW_S)
    held = held_gpus_per_bucket(runs, since=SINCE, until=until, bucket_s=BUCKET_S)
    assert len(held) == WINDOW_S // BUCKET_S + 1
    for bucket, value in enumerate(held[:-1]):
        seconds = range(bucket * BUCKET_S, (bucket + 1) * BUCKET_S)
        per_second = [held_at(runs, s) for s in seconds]
        assert value == round(sum(per_second) / BUCKET_S, 2), (bucket, per_second)
        assert value <= max(per_second) <= GPUS
    # The point at ``until``: what is held at that instant (a run ending then still counts).
    at = until
    assert held[-1] == sum(g for start, end, g in runs if start <= at <= end)
    assert held[-1] <= GPUS


def test_nine_short_jobs_in_one_bucket_on_two_gpus_hold_at_most_two():
    # The case of the issue: nine one-minute jobs, one after another on 2 GPUs, in 10 minutes.
    runs = []
    for i in range(9):
        start = SINCE + timedelta(seconds=60 * (i // 2 * 2) + 5 * (i % 2))
        runs.append((start, start + timedelta(seconds=60), 1))
    held = held_gpus_per_bucket(
        runs, since=SINCE, until=SINCE + timedelta(seconds=600), bucket_s=600
    )
    assert held[0] == round(9 * 60 / 600, 2) == 0.9
    assert held[1] == 0
