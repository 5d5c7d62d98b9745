"""maxSimultaneousJobs buckets and per-user limits."""

import pytest

from jobs.scheduler import SchedulerConfig, run_cycle

from .builders import queued, running, slave, snapshot, started

SLAVES = [slave("s1", gpus=8, cpus=32, memory=256)]


def test_bucket_counts_from_snapshot_and_cycle_starts():
    jobs = [queued(f"j{i}", bucket=("sweep", 2)) for i in range(4)]
    result = run_cycle(snapshot(slaves=SLAVES, queued=jobs, bucket_counts={"sweep": 1}))
    assert set(started(result)) == {"j0"}
    for job_id in ("j1", "j2", "j3"):
        assert result.explanations[job_id] == ("bucket sweep full (2/2)",)


def test_bucket_shared_by_every_user():
    jobs = [
        queued("a", user="alice", bucket=("shared", 1)),
        queued("b", user="bob", bucket=("shared", 1)),
    ]
    result = run_cycle(snapshot(slaves=SLAVES, queued=jobs))
    assert len(result.starts) == 1


def test_bucket_counted_from_running_when_bridge_did_not():
    run = running("r", "s1", gpu_ids=(0,), bucket="sweep")
    result = run_cycle(
        snapshot(slaves=SLAVES, running=[run], queued=[queued("j", bucket=("sweep", 1))])
    )
    assert result.explanations["j"] == ("bucket sweep full (1/1)",)


def test_other_buckets_do_not_interfere():
    result = run_cycle(
        snapshot(
            slaves=SLAVES, queued=[queued("j", bucket=("mine", 1))], bucket_counts={"other": 9}
        )
    )
    assert "j" in started(result)


@pytest.mark.parametrize(
    ("config", "running_gpus", "job_gpus", "expected"),
    [
        (SchedulerConfig(per_user_max_running_jobs=2), (1, 1), 1, "user limit: 2/2 running jobs"),
        (SchedulerConfig(per_user_max_running_jobs=3), (1, 1), 1, None),
        (
            SchedulerConfig(per_user_max_gpus=4),
            (2, 1),
            2,
            "user limit: 3/4 GPUs in use, job needs 2",
        ),
        (SchedulerConfig(per_user_max_gpus=4), (2, 1), 1, None),
        (SchedulerConfig(per_user_max_gpus=0), (), 0, None),  # CPU-only jobs are not GPU-limited
    ],
)
def test_per_user_limits(config, running_gpus, job_gpus, expected):
    runs = []
    next_gpu = 0
    for i, count in enumerate(running_gpus):
        ids = tuple(range(next_gpu, next_gpu + count))
        next_gpu += count
        runs.append(running(f"r{i}", "s1", user="alice", gpu_ids=ids, cpu_ids=(i,)))
    job = queued("j", user="alice", gpus=job_gpus)
    result = run_cycle(snapshot(slaves=SLAVES, running=runs, queued=[job], config=config))
    if expected is None:
        assert "j" in started(result)
    else:
        assert result.explanations["j"] == (expected,)


def test_user_limit_counts_starts_of_the_cycle():
    jobs = [queued(f"j{i}", user="alice") for i in range(5)] + [queued("b", user="bob")]
    config = SchedulerConfig(per_user_max_running_jobs=2)
    result = run_cycle(snapshot(slaves=SLAVES, queued=jobs, config=config))
    assert set(started(result)) == {"j0", "j1", "b"}
    assert result.explanations["j4"] == ("user limit: 2/2 running jobs",)
