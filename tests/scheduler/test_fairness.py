"""Fairness halts ("Score"): much lighter users' jobs take the place of heavy users' jobs."""

import pytest

from jobs.scheduler import HaltReason, SchedulerConfig, run_cycle
from jobs.scheduler.fairness import much_heavier

from .builders import DAY, HOUR, WEEK, ago, halted_ids, queued, running, slave, snapshot, started

HEAVY = 1_000_000.0
SLAVE = [slave("s1", gpus=4)]


def busy(job_id, gpu_ids, *, user="heavy", started_s_ago=DAY, min_s=HOUR, **kw):
    cpus = tuple(range(gpu_ids[0] * 2, gpu_ids[0] * 2 + 2))
    return running(
        job_id,
        "s1",
        user=user,
        gpu_ids=gpu_ids,
        cpu_ids=cpus,
        memory=8,
        started=ago(started_s_ago),
        min_s=min_s,
        **kw,
    )


def cycle(runs, jobs, usage=None, config=None, slaves=SLAVE):
    return run_cycle(
        snapshot(
            slaves=slaves,
            running=runs,
            queued=jobs,
            usage={"heavy": HEAVY, **(usage or {})},
            config=config,
        )
    )


def test_light_user_halts_heavy_job_past_min_duration():
    runs = [busy("h1", (0, 1)), busy("h2", (2, 3))]
    result = cycle(runs, [queued("light", user="light", gpus=2)])
    (halt,) = result.halts
    assert halt.reason == HaltReason.SCORE == "Score"
    assert halt.job_id in {"h1", "h2"}
    assert not result.starts  # the job waits for the halted one to end
    assert result.explanations["light"] == ("waiting for 1 halted job(s) on s1 to free room",)
    assert halt.halt_info.to_json() == {
        "reason": "Score",
        "time": "2026-06-01T12:00:00Z",
        "startedJobUuids": ["light"],
        "haltedJobUuids": [halt.job_id],
        "slaveName": "s1",
        "slaveInstance": "s1",
        "startedJobScores": [0.0],
        "haltedJobScores": [HEAVY],
    }


def test_never_before_min_duration():
    runs = [busy("h1", (0, 1), started_s_ago=HOUR, min_s=DAY), busy("h2", (2, 3), min_s=2 * DAY)]
    result = cycle(runs, [queued("light", user="light", gpus=2)])
    assert not result.halts
    # It is told when h1's minDuration ends (issue 26 item 5; before: "no free GPUs" only).
    assert result.explanations["light"] == (
        "room on s1 from 2026-06-02 11:00 UTC: 1 running job there reaches its minDuration "
        "then and may be halted for this job (fair share)",
        "cluster 1: no free GPUs, job needs 2",
    )


def test_never_when_the_job_can_start_elsewhere():
    runs = [busy("h1", (0, 1)), busy("h2", (2, 3))]
    result = cycle(runs, [queued("light", user="light", gpus=2)], slaves=SLAVE + [slave("s2")])
    assert not result.halts
    assert started(result)["light"].slave == "s2"


@pytest.mark.parametrize(
    ("light_usage", "heavy_usage", "halts"),
    [
        (0.0, 10 * HOUR, True),
        (0.0, HOUR, False),  # difference not above the floor
        (4 * HOUR, 10 * HOUR, True),
        (5 * HOUR, 10 * HOUR, False),  # not below half
        (10 * HOUR, 10 * HOUR, False),
    ],
)
def test_only_much_lighter_users(light_usage, heavy_usage, halts):
    config = SchedulerConfig()
    assert much_heavier(heavy_usage, light_usage, config) is halts
    runs = [busy("h1", (0, 1, 2, 3))]
    result = cycle(
        runs,
        [queued("light", user="light")],
        usage={"light": light_usage, "heavy": heavy_usage},
    )
    assert bool(result.halts) is halts


def test_minimal_set_prefers_one_victim_that_is_enough():
    runs = [busy("one-a", (0,)), busy("one-b", (1,)), busy("two", (2, 3))]
    result = cycle(runs, [queued("light", user="light", gpus=2)])
    assert halted_ids(result) == {"two"}


def test_minimal_set_of_several_victims():
    runs = [busy("a", (0,)), busy("b", (1,)), busy("c", (2,)), busy("d", (3,))]
    result = cycle(runs, [queued("light", user="light", gpus=3)])
    assert len(halted_ids(result)) == 3
    (info,) = {h.halt_info for h in result.halts}  # one HaltInfo for the whole set
    assert sorted(info.halted_job_uuids) == sorted(halted_ids(result))


def test_prefers_restartable_then_heaviest():
    runs = [
        busy("plain", (0,), user="heavier"),
        busy("restartable", (1,), restartable=True),
        busy("young", (2, 3), started_s_ago=HOUR / 2),
    ]
    usage = {"heavier": 2 * HEAVY}
    assert halted_ids(cycle(runs, [queued("light", user="light")], usage=usage)) == {"restartable"}
    runs[1] = busy("other", (1,))
    assert halted_ids(cycle(runs, [queued("light", user="light")], usage=usage)) == {"plain"}


def test_room_is_held_for_the_job_that_halted():
    runs = [busy("h1", (0, 1)), busy("h2", (2, 3))]
    jobs = [
        queued("a", user="light", gpus=2),
        queued("b", user="light", gpus=2),
        queued("c", user="light", gpus=2),
    ]
    result = cycle(runs, jobs)
    assert halted_ids(result) == {"h1", "h2"}
    held = {j: result.explanations[j] for j in ("a", "b")}
    assert all(e == ("waiting for 1 halted job(s) on s1 to free room",) for e in held.values())
    assert result.explanations["c"] == ("cluster 1: no free GPUs, job needs 2",)


def test_next_cycle_waits_for_halting_jobs_and_halts_nothing_new():
    runs = [busy("h1", (0, 1), halting=True), busy("h2", (2, 3))]
    result = cycle(runs, [queued("light", user="light", gpus=2)])
    assert not result.halts
    assert result.explanations["light"] == ("waiting for 1 halted job(s) on s1 to free room",)


def test_disabled_and_capped():
    runs = [busy("a", (0,)), busy("b", (1,)), busy("c", (2,)), busy("d", (3,))]
    jobs = [queued(f"q{i}", user="light") for i in range(4)]
    assert not cycle(runs, jobs, config=SchedulerConfig(fairness_halts=False)).halts
    capped = cycle(runs, jobs, config=SchedulerConfig(max_fairness_halts_per_cycle=2))
    assert len(capped.halts) == 2


def test_min_queued_time():
    runs = [busy("h", (0, 1, 2, 3))]
    config = SchedulerConfig(fairness_halt_min_queued_s=HOUR)
    fresh = queued("fresh", user="light", submitted=ago(60))
    assert not cycle(runs, [fresh], config=config).halts
    old = queued("old", user="light", submitted=ago(2 * HOUR))
    assert cycle(runs, [old], config=config).halts


def test_guest_job_never_halts_owner_jobs_on_a_private_cluster():
    private = slave("p1", 7, private=True, owners=("lab",))
    runs = [
        running("own", "p1", user="heavy", project="lab", gpu_ids=(0, 1, 2, 3), started=ago(WEEK))
    ]
    result = cycle(runs, [queued("g", user="light", min_duration_s=HOUR)], slaves=[private])
    assert not result.halts
