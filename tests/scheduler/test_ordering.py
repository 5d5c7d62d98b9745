"""Queue order: interactive first, then fair share, shorter maxDuration, submit time, id."""

import pytest

from jobs.scheduler import run_cycle
from jobs.scheduler.ordering import order_queue

from .builders import DAY, HOUR, ago, queued, slave, snapshot, started

ONE_GPU = [slave("s1", gpus=1)]


@pytest.mark.parametrize(
    ("first", "second", "usage"),
    [
        pytest.param(
            queued("light", user="light", submitted=ago(HOUR)),
            queued("heavy", user="heavy", submitted=ago(DAY)),
            {"heavy": 100.0, "light": 1.0},
            id="lighter-user-first-even-if-newer",
        ),
        pytest.param(
            queued("new-user", user="nobody"),
            queued("known", user="someone"),
            {"someone": 5.0},
            id="unknown-user-has-no-usage",
        ),
        pytest.param(
            queued("inter", interactive=True, submitted=ago(HOUR)),
            queued("batch", submitted=ago(DAY)),
            {},
            id="interactive-before-batch",
        ),
        pytest.param(
            queued("short", max_duration_s=HOUR, submitted=ago(HOUR)),
            queued("long", max_duration_s=DAY, submitted=ago(DAY)),
            {},
            id="shorter-max-duration",
        ),
        pytest.param(
            queued("old", submitted=ago(DAY)), queued("young", submitted=ago(HOUR)), {}, id="fifo"
        ),
        pytest.param(
            queued("a", submitted=ago(HOUR)), queued("b", submitted=ago(HOUR)), {}, id="id"
        ),
    ],
)
def test_order(first, second, usage):
    assert [j.id for j in order_queue([second, first], usage)] == [first.id, second.id]
    result = run_cycle(snapshot(slaves=ONE_GPU, queued=[second, first], usage=usage))
    assert set(started(result)) == {first.id}
    assert result.explanations[second.id]


def test_interactive_of_heavier_user_beats_fair_share():
    jobs = [
        queued("inter", user="heavy", interactive=True),
        queued("batch", user="light"),
    ]
    assert [j.id for j in order_queue(jobs[::-1], {"heavy": 10.0})] == ["inter", "batch"]
    result = run_cycle(snapshot(slaves=ONE_GPU, queued=jobs, usage={"heavy": 10.0}))
    assert set(started(result)) == {"inter"}
    assert result.fails == ()
    assert result.explanations["batch"]


def test_fair_share_orders_interactive_jobs_among_themselves():
    jobs = [
        queued("heavy", user="heavy", interactive=True, submitted=ago(DAY)),
        queued("light", user="light", interactive=True),
        queued("batch", user="nobody"),
    ]
    assert [j.id for j in order_queue(jobs, {"heavy": 10.0, "light": 1.0})] == [
        "light",
        "heavy",
        "batch",
    ]
