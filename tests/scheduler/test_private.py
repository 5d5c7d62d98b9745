"""Private clusters: owners first, guests with no clusterId and a short minDuration."""

import pytest

from jobs.scheduler import HaltReason, SchedulerConfig, run_cycle

from .builders import DAY, HOUR, ago, halted_ids, queued, running, slave, snapshot, started

PRIVATE = slave("p1", 7, private=True, owners=("lab",))
PUBLIC = slave("s1", 1)


@pytest.mark.parametrize(
    ("job", "expected"),
    [
        (queued("j", project="lab", cluster_id=7), "p1"),
        (queued("j", project="lab"), "p1"),  # owners use their own cluster first
        (queued("j", min_duration_s=HOUR), "p1"),  # a guest
        (queued("j", min_duration_s=HOUR + 1), None),  # minDuration too long for a guest
        (queued("j", min_duration_s=HOUR, cluster_id=7), None),  # guests name no clusterId
        (queued("j", min_duration_s=HOUR, slave_name="p1"), "p1"),
    ],
)
def test_access(job, expected):
    result = run_cycle(snapshot(slaves=[PRIVATE], queued=[job]))
    start = started(result).get("j")
    assert (start.slave if start else None) == expected


def test_guest_prefers_public_slaves():
    job = queued("j", min_duration_s=HOUR)
    result = run_cycle(snapshot(slaves=[PRIVATE, slave("z-public", 1)], queued=[job]))
    assert started(result)["j"].slave == "z-public"


def test_guest_limit_is_configurable():
    job = queued("j", min_duration_s=DAY)
    config = SchedulerConfig(private_guest_max_min_duration_s=DAY)
    assert "j" in started(run_cycle(snapshot(slaves=[PRIVATE], queued=[job], config=config)))


def test_explanation_for_a_would_be_guest():
    result = run_cycle(snapshot(slaves=[PRIVATE], queued=[queued("j")]))
    assert result.explanations["j"] == (
        "private cluster 7 takes guest jobs only with minDuration <= 1 hour",
    )
    result = run_cycle(snapshot(slaves=[PRIVATE], queued=[queued("k", cluster_id=7)]))
    assert result.explanations["k"] == ("cluster 7 is private to its owners' projects",)


def test_guests_wait_while_owner_jobs_wait():
    owner_run = running(
        "o", "p1", project="lab", gpu_ids=(0, 1, 2), cpu_ids=(0,), started=ago(HOUR / 2)
    )
    jobs = [
        queued("guest", user="light", min_duration_s=HOUR),  # first in fair-share order
        queued("owner", user="heavy", project="lab", gpus=2),  # needs 2, only 1 free
    ]
    result = run_cycle(
        snapshot(slaves=[PRIVATE], running=[owner_run], queued=jobs, usage={"heavy": 10.0})
    )
    assert not result.starts
    assert (
        "private cluster 7: its owners' jobs are waiting for room" in result.explanations["guest"]
    )


def test_guests_go_once_owner_jobs_are_placed():
    jobs = [
        queued("owner", user="light", project="lab", gpus=2),
        queued("guest", user="heavy", min_duration_s=HOUR, gpus=2),
    ]
    result = run_cycle(snapshot(slaves=[PRIVATE], queued=jobs, usage={"heavy": 10.0}))
    assert set(started(result)) == {"owner", "guest"}


def test_owner_halts_guests_past_min_duration_and_holds_the_room():
    runs = [
        running("g-old", "p1", user="g1", gpu_ids=(0, 1), started=ago(DAY), min_s=HOUR),
        running("g-young", "p1", user="g2", gpu_ids=(2,), started=ago(HOUR / 2), min_s=HOUR),
        running("own", "p1", project="lab", gpu_ids=(3,), started=ago(DAY), min_s=HOUR),
        running("public", "s1", gpu_ids=(0, 1, 2, 3), started=ago(HOUR / 2), min_s=HOUR),
    ]
    jobs = [queued("a-owner", project="lab", gpus=2), queued("b-owner", project="lab", gpus=1)]
    result = run_cycle(snapshot(slaves=[PRIVATE, PUBLIC], running=runs, queued=jobs))
    assert halted_ids(result) == {"g-old"}
    (halt,) = result.halts
    assert halt.reason == HaltReason.CLUSTER == "Private Cluster Priority"
    assert halt.halt_info.started_job_uuids == ("a-owner",)
    assert result.explanations["a-owner"] == ("waiting for 1 halted job(s) on p1 to free room",)
    # The room is held for a-owner: b-owner does not claim it and cannot halt g-young yet.
    assert not result.starts
    # ... and is told when it can (issue 26 item 5; before: "no free GPUs" only).
    assert result.explanations["b-owner"] == (
        "room on p1 from 12:30 UTC: 1 running job there reaches its minDuration then and may "
        "be halted for this job (private cluster priority)",
        "cluster 1: no free GPUs, job needs 1",
        "cluster 7: no free GPUs, job needs 1",
    )


def test_next_cycle_waits_for_the_halting_guest_without_new_halts():
    runs = [
        running("g-old", "p1", user="g1", gpu_ids=(0, 1), started=ago(DAY), halting=True),
        running("g-old2", "p1", user="g1", gpu_ids=(2, 3), started=ago(DAY), min_s=HOUR),
    ]
    result = run_cycle(
        snapshot(slaves=[PRIVATE], running=runs, queued=[queued("o", project="lab", gpus=2)])
    )
    assert not result.halts
    assert result.explanations["o"] == ("waiting for 1 halted job(s) on p1 to free room",)


def test_owner_does_not_halt_guests_before_min_duration():
    runs = [running("g", "p1", gpu_ids=(0, 1, 2, 3), started=ago(HOUR / 2), min_s=HOUR)]
    result = run_cycle(
        snapshot(slaves=[PRIVATE], running=runs, queued=[queued("o", project="lab")])
    )
    assert not result.halts
    assert result.explanations["o"]


def test_owner_does_not_halt_when_it_can_start_elsewhere():
    runs = [running("g", "p1", gpu_ids=(0, 1, 2, 3), started=ago(DAY), min_s=HOUR)]
    result = run_cycle(
        snapshot(slaves=[PRIVATE, PUBLIC], running=runs, queued=[queued("o", project="lab")])
    )
    assert not result.halts
    assert started(result)["o"].slave == "s1"


def test_owner_never_halts_other_owner_jobs():
    runs = [running("mine", "p1", project="lab", gpu_ids=(0, 1, 2, 3), started=ago(DAY))]
    result = run_cycle(
        snapshot(slaves=[PRIVATE], running=runs, queued=[queued("o", project="lab")])
    )
    assert not result.halts
