"""Interactive jobs start in this cycle or fail with the reason."""

from jobs.scheduler import SchedulerConfig, run_cycle

from .builders import HOUR, WEEK, ago, failed, halted_ids, queued, running, slave, snapshot, started


def test_interactive_starts_when_room():
    result = run_cycle(snapshot(slaves=[slave("s1")], queued=[queued("i", interactive=True)]))
    assert "i" in started(result)
    assert "i" not in result.explanations


def test_interactive_fails_with_reason_when_no_room():
    busy = running("r", "s1", gpu_ids=(0, 1, 2, 3), cpu_ids=(0,))
    result = run_cycle(
        snapshot(slaves=[slave("s1")], running=[busy], queued=[queued("i", interactive=True)])
    )
    reasons = failed(result)
    assert reasons["i"].startswith("interactive job could not start at once: ")
    assert "cluster 1: no free GPUs, job needs 1" in reasons["i"]
    assert "i" not in result.explanations


def test_interactive_fails_when_bucket_full():
    job = queued("i", interactive=True, bucket=("b", 1))
    result = run_cycle(snapshot(slaves=[slave("s1")], queued=[job], bucket_counts={"b": 1}))
    assert failed(result) == {"i": "interactive job could not start at once: bucket b full (1/1)"}


def test_interactive_fails_when_request_impossible():
    result = run_cycle(
        snapshot(slaves=[slave("s1")], queued=[queued("i", interactive=True, gpus=9)])
    )
    assert "no slave has 9 GPUs (largest: 4 on s1)" in failed(result)["i"]


def test_interactive_never_halts_others():
    heavy = running(
        "r", "s1", user="heavy", gpu_ids=(0, 1, 2, 3), cpu_ids=(0,), started=ago(WEEK), min_s=HOUR
    )
    job = queued("i", user="light", interactive=True)
    result = run_cycle(
        snapshot(
            slaves=[slave("s1")],
            running=[heavy],
            queued=[job],
            usage={"heavy": 1e9},
            config=SchedulerConfig(),
        )
    )
    assert halted_ids(result) == set()
    assert "i" in failed(result)
