"""Resource fit and identity filters: where a single job may start."""

import pytest

from jobs.scheduler import run_cycle

from .builders import A100, DAY, GTX, V100, ago, queued, running, slave, snapshot, started

BASE = [slave("s1", 1, gpus=4, cpus=16, memory=64)]


@pytest.mark.parametrize(
    ("slaves", "job", "expected"),
    [
        pytest.param(BASE, queued("j", gpus=4), "s1", id="all-gpus"),
        pytest.param(BASE, queued("j", gpus=5), None, id="too-many-gpus"),
        pytest.param(BASE, queued("j", gpus=0, cpus=16), "s1", id="all-cpus"),
        pytest.param(BASE, queued("j", cpus=17), None, id="too-many-cpus"),
        pytest.param(BASE, queued("j", memory=64), "s1", id="all-memory"),
        pytest.param(BASE, queued("j", memory=64.5), None, id="memory-with-tmpfs-too-big"),
        pytest.param(BASE, queued("j", cluster_id=1), "s1", id="cluster-match"),
        pytest.param(BASE, queued("j", cluster_id=2), None, id="cluster-mismatch"),
        pytest.param(BASE, queued("j", slave_name="s1"), "s1", id="slave-name"),
        pytest.param(BASE, queued("j", slave_name="s2"), None, id="slave-name-unknown"),
        pytest.param(BASE, queued("j", models=("v100",)), "s1", id="model-substring-nocase"),
        pytest.param(BASE, queued("j", models=("A100", "V100")), "s1", id="model-any-of"),
        pytest.param(BASE, queued("j", models=("A100",)), None, id="model-missing"),
        pytest.param(BASE, queued("j", gpus=0, models=("A100",)), "s1", id="model-ignored-no-gpu"),
        pytest.param(BASE, queued("j", min_cuda=12), "s1", id="cuda-equal"),
        pytest.param(BASE, queued("j", min_cuda=13), None, id="cuda-too-old"),
        pytest.param([slave("s1", cuda=None)], queued("j", min_cuda=1), None, id="cuda-unknown"),
        pytest.param([slave("s1", features=("ssd", "ib"))], queued("j", features=("ssd",)), "s1"),
        pytest.param([slave("s1", features=("ssd",))], queued("j", features=("ssd", "ib")), None),
        pytest.param([slave("s1", online=False)], queued("j"), None, id="offline"),
        pytest.param([slave("s1", accepting=False)], queued("j"), None, id="not-accepting"),
        pytest.param(
            [slave("s1", gpus=2), slave("s2", gpus=4)], queued("j", gpus=3), "s2", id="skip-small"
        ),
    ],
)
def test_single_job_fit(slaves, job, expected):
    result = run_cycle(snapshot(slaves=slaves, queued=[job]))
    start = started(result).get("j")
    assert (start.slave if start else None) == expected
    if expected is None:
        assert result.explanations["j"], "a waiting job is always explained"


def test_lowest_free_ids_are_assigned_and_running_jobs_respected():
    run = running("r", "s1", gpu_ids=(0, 2), cpu_ids=(0, 1, 2), memory=10)
    result = run_cycle(
        snapshot(slaves=BASE, running=[run], queued=[queued("j", gpus=2, cpus=3, memory=54)])
    )
    start = started(result)["j"]
    assert start.gpu_ids == (1, 3)
    assert start.cpu_ids == (3, 4, 5)


def test_memory_of_running_jobs_counts():
    run = running("r", "s1", gpu_ids=(0,), cpu_ids=(0,), memory=60)
    result = run_cycle(snapshot(slaves=BASE, running=[run], queued=[queued("j", memory=5)]))
    assert "j" not in started(result)
    assert "free memory" in " ".join(result.explanations["j"])


def test_placements_of_the_cycle_are_visible_to_later_jobs():
    jobs = [queued(f"j{i}", gpus=2, cpus=4, submitted=None) for i in range(3)]
    result = run_cycle(snapshot(slaves=BASE, queued=jobs))
    starts = started(result)
    assert len(starts) == 2
    ids = [gpu for s in starts.values() for gpu in s.gpu_ids]
    assert sorted(ids) == [0, 1, 2, 3]
    cpus = [cpu for s in starts.values() for cpu in s.cpu_ids]
    assert len(cpus) == len(set(cpus)) == 8
    (waiting,) = set(j.id for j in jobs) - set(starts)
    assert result.explanations[waiting]


def test_mixed_model_slave_gives_matching_gpus():
    mixed = slave("s1", models=(GTX, V100, GTX, V100))
    result = run_cycle(snapshot(slaves=[mixed], queued=[queued("j", gpus=2, models=("V100",))]))
    assert started(result)["j"].gpu_ids == (1, 3)
    result = run_cycle(snapshot(slaves=[mixed], queued=[queued("j", gpus=3, models=("V100",))]))
    assert "j" not in started(result)


def test_packing_prefers_partly_used_slave():
    slaves = [slave("a-empty", gpus=4), slave("b-busy", gpus=4)]
    run = running("r", "b-busy", gpu_ids=(0, 1), cpu_ids=(0,))
    result = run_cycle(snapshot(slaves=slaves, running=[run], queued=[queued("j", gpus=2)]))
    assert started(result)["j"].slave == "b-busy"


def test_packing_prefers_smallest_sufficient_block():
    slaves = [slave("a", gpus=8), slave("b", gpus=2), slave("c", gpus=4)]
    result = run_cycle(snapshot(slaves=slaves, queued=[queued("j", gpus=2)]))
    assert started(result)["j"].slave == "b"


def test_cpu_only_job_avoids_free_gpu_slaves():
    slaves = [slave("a-gpu", gpus=4), slave("b-cpu", gpus=0)]
    result = run_cycle(snapshot(slaves=slaves, queued=[queued("j", gpus=0, cpus=2)]))
    assert started(result)["j"].slave == "b-cpu"


def test_ties_break_by_slave_name():
    slaves = [slave("s3"), slave("s1"), slave("s2")]
    result = run_cycle(snapshot(slaves=slaves, queued=[queued("j")]))
    assert started(result)["j"].slave == "s1"


def test_a100_model_on_other_cluster():
    slaves = [slave("v", 1, model=V100), slave("a", 2, model=A100)]
    result = run_cycle(snapshot(slaves=slaves, queued=[queued("j", models=("a100",))]))
    assert started(result)["j"].slave == "a"


def test_pinned_slave_with_no_room_waits_with_its_reason():
    run = running("r", "s1", gpu_ids=(0, 1, 2, 3), cpu_ids=(0,))
    slaves = [slave("s1"), slave("s2")]
    result = run_cycle(
        snapshot(slaves=slaves, running=[run], queued=[queued("j", slave_name="s1")])
    )
    assert "j" not in started(result)
    assert result.explanations["j"] == ("slave s1 has 0 free GPUs, job needs 1",)


def test_smaller_request_after_a_failed_larger_one_still_starts():
    runs = [running("r", "s1", gpu_ids=(0, 1, 2), cpu_ids=(0,))]
    jobs = [
        queued("a-big", gpus=2, submitted=ago(DAY)),
        queued("b-bigger", gpus=3, submitted=ago(DAY)),
        queued("c-small", gpus=1),
    ]
    result = run_cycle(snapshot(slaves=BASE, running=runs, queued=jobs))
    assert set(started(result)) == {"c-small"}
    # Explanations describe the end of the cycle: c-small took the last GPU.
    assert result.explanations["b-bigger"] == ("cluster 1: no free GPUs, job needs 3",)
