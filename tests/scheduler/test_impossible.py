"""impossible_reason: requests no registered slave could ever run, whatever the load."""

import pytest

from jobs.scheduler import impossible_reason

from .builders import A100, GTX, V100, queued, slave

FLEET = [
    slave("gpu1", 1, gpus=8, model=V100, cpus=32, memory=256, cuda=11, features=("ssd",)),
    slave("gpu2", 1, gpus=4, model=GTX, cpus=16, memory=64, cuda=12, online=False),
    slave("gpu3", 2, gpus=2, model=A100, cpus=64, memory=512, cuda=12),
    slave("lab1", 7, gpus=4, model=A100, private=True, owners=("lab",)),
]


@pytest.mark.parametrize(
    ("job", "reason"),
    [
        (queued("j"), None),
        (queued("j", gpus=4, models=("1080",)), None),  # the offline slave still counts
        (queued("j", gpus=9), "no slave has 9 GPUs (largest: 8 on gpu1)"),
        (queued("j", gpus=3, models=("a100",), min_duration_s=3600), None),  # lab1 as a guest
        (
            queued("j", gpus=3, models=("a100",), min_duration_s=86400),
            "private cluster 7 takes guest jobs only with minDuration <= 1 hour",
        ),
        (queued("j", gpus=5, models=("a100",)), "no slave has 5 a100 GPUs (largest: 2 on gpu3)"),
        (queued("j", cluster_id=5), "no cluster 5 (known: 1, 2, 7)"),
        (queued("j", cluster_id=7), "cluster 7 is private to its owners' projects"),
        (queued("j", cluster_id=7, project="lab"), None),
        (queued("j", slave_name="nope"), "no slave named nope"),
        (queued("j", slave_name="gpu3", cluster_id=1), "slave gpu3 is in cluster 2, not cluster 1"),
        (queued("j", slave_name="gpu3", gpus=3), "slave gpu3 has 2 GPUs, job needs 3"),
        (
            queued("j", models=("H100",)),
            f"no slave has GPU model H100 (known: {GTX}, {A100}, {V100})",
        ),
        (
            queued("j", cluster_id=1, models=("A100",)),
            f"cluster 1: no slave has GPU model A100 (known: {GTX}, {V100})",
        ),
        (queued("j", min_cuda=13), "no slave has CUDA >= 13 (highest: 12)"),
        (
            queued("j", gpus=4, models=("A100",)),
            "private cluster 7 takes guest jobs only with minDuration <= 1 hour",
        ),
        (queued("j", gpus=4, models=("A100",), min_duration_s=3600), None),
        (queued("j", features=("infiniband",)), "no slave offers feature(s) infiniband"),
        (queued("j", cpus=128), "no slave with 1 GPU has 128 CPUs (largest: 64 on gpu3)"),
        (queued("j", gpus=0, cpus=128), "no slave has 128 CPUs (largest: 64 on gpu3)"),
        (
            queued("j", memory=1024),
            "no slave with 1 GPU has 1024 GB memory (largest: 512 GB on gpu3)",
        ),
        (
            queued("j", gpus=0, cpus=40, memory=1024),
            "no slave with 40 CPUs has 1024 GB memory (largest: 512 GB on gpu3)",
        ),
    ],
)
def test_impossible_reason(job, reason):
    assert impossible_reason(job, FLEET) == reason


def test_no_slaves_at_all():
    assert impossible_reason(queued("j"), []) == "no slaves are registered"
