"""Explanations for jobs left queued: short, specific, aggregated."""

import pytest

from jobs.scheduler import SchedulerConfig, run_cycle
from jobs.scheduler.text import compress_names, fmt_gb

from .builders import A100, GTX, V100, queued, running, slave, snapshot


def test_largest_free_block_example():
    slaves = [slave("gpu7", 3, gpus=4), slave("gpu8", 3, gpus=4)]
    runs = [
        running("r1", "gpu7", gpu_ids=(0, 1), cpu_ids=(0,)),
        running("r2", "gpu8", gpu_ids=(0, 1, 2), cpu_ids=(0,)),
    ]
    result = run_cycle(snapshot(slaves=slaves, running=runs, queued=[queued("j", gpus=4)]))
    assert result.explanations["j"] == (
        "cluster 3: largest free block is 2 GPUs on gpu7, job needs 4",
    )


def test_unknown_gpu_model():
    slaves = [slave("a", model=V100), slave("b", model=GTX)]
    result = run_cycle(snapshot(slaves=slaves, queued=[queued("j", models=("A100",))]))
    assert result.explanations["j"] == (f"no slave has GPU model A100 (known: {GTX}, {V100})",)


def test_cpu_and_memory_shortage():
    s = slave("s1", gpus=4, cpus=8, memory=32)
    runs = [running("r", "s1", gpu_ids=(0,), cpu_ids=tuple(range(6)), memory=30)]
    result = run_cycle(snapshot(slaves=[s], running=runs, queued=[queued("c", cpus=4)]))
    assert result.explanations["c"] == (
        "cluster 1: at most 2 free CPUs on a slave with 1 free GPU (s1), job needs 4",
    )
    result = run_cycle(snapshot(slaves=[s], running=runs, queued=[queued("m", memory=4)]))
    assert result.explanations["m"] == (
        "cluster 1: at most 2 GB free memory on a slave with room for its GPUs and CPUs (s1), "
        "job needs 4 GB",
    )


def test_many_slaves_are_summarised_per_cluster():
    slaves = [slave(f"n{i:03d}", 1 + i % 5, gpus=2) for i in range(1000)]
    runs = [running(f"r{i}", s.name, gpu_ids=(0,), cpu_ids=(0,)) for i, s in enumerate(slaves)]
    result = run_cycle(snapshot(slaves=slaves, running=runs, queued=[queued("j", gpus=2)]))
    lines = result.explanations["j"]
    assert lines[0] == "cluster 1: largest free block is 1 GPU on n000, job needs 2"
    assert lines[-1] == "and 2 more clusters with less room"
    assert len(lines) == 4


def test_offline_slaves_are_counted():
    slaves = [slave("a", online=False), slave("b", accepting=False)]
    result = run_cycle(snapshot(slaves=slaves, queued=[queued("j")]))
    assert result.explanations["j"] == (
        "2 matching slaves are offline or not accepting jobs (a, b)",
    )


def test_explanations_are_capped():
    slaves = [slave(f"c{i}", i) for i in range(1, 10)]
    runs = [running(f"r{i}", s.name, gpu_ids=(0, 1, 2, 3)) for i, s in enumerate(slaves)]
    config = SchedulerConfig(max_explanations=2)
    result = run_cycle(snapshot(slaves=slaves, running=runs, queued=[queued("j")], config=config))
    assert len(result.explanations["j"]) == 2


def test_same_shape_shares_explanations():
    runs = [running("r", "s1", gpu_ids=(0, 1, 2, 3))]
    jobs = [queued(f"j{i}", user=f"u{i}") for i in range(3)]
    result = run_cycle(snapshot(slaves=[slave("s1")], running=runs, queued=jobs))
    assert len({result.explanations[j.id] for j in jobs}) == 1


def test_started_jobs_have_no_explanation():
    result = run_cycle(snapshot(slaves=[slave("s1", model=A100)], queued=[queued("j")]))
    assert result.explanations == {}


@pytest.mark.parametrize(
    ("names", "text"),
    [
        (["gpu1", "gpu2", "gpu3", "gpu4"], "gpu1-gpu4"),
        (["gpu4", "gpu1", "gpu2", "gpu7"], "gpu1-gpu2, gpu4, gpu7"),
        (["b", "a"], "a, b"),
        ([f"n{i}" for i in range(0, 40, 2)], "n0, n2, n4, n6 and 16 more"),
    ],
)
def test_compress_names(names, text):
    assert compress_names(names) == text


@pytest.mark.parametrize(("value", "text"), [(32.0, "32 GB"), (12.5, "12.5 GB"), (0.25, "0.25 GB")])
def test_fmt_gb(value, text):
    assert fmt_gb(value) == text
