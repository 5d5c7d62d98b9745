"""Property-based checks of run_cycle over random snapshots."""

from __future__ import annotations

import random
import re
from collections import defaultdict
from datetime import timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jobs.scheduler import (
    GpuInfo,
    QueuedJob,
    ReservationWindow,
    RunningJob,
    SchedulerConfig,
    SlaveState,
    Snapshot,
    run_cycle,
)

from .builders import A100, GTX, NOW, V100

HOUR = 3600
DAY = 24 * HOUR
USERS = ("u1", "u2", "u3", "u4")
PROJECTS = ("p1", "p2", "lab", "course")
BUCKETS = {"b1": 1, "b2": 2}
PORTS = (8080, 8081, 8888)
SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def snapshots(draw) -> Snapshot:
    """Random snapshots: hypothesis draws the sizes and the policy knobs (so failures shrink to
    few slaves and jobs); a seeded RNG fills in the details (fast, and still reproducible)."""
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    n_slaves = draw(st.integers(1, 5))
    n_reservations = draw(st.integers(0, 2))
    max_running = draw(st.integers(0, 3))
    n_queued = draw(st.integers(0, 12))
    config = SchedulerConfig(
        per_user_max_running_jobs=draw(st.none() | st.integers(1, 4)),
        per_user_max_gpus=draw(st.none() | st.integers(1, 6)),
        max_fairness_halts_per_cycle=draw(st.integers(0, 4)),
    )

    def maybe(value, p=0.5):
        return value if rng.random() < p else None

    def subset(items, most):
        return frozenset(rng.sample(list(items), rng.randint(0, min(most, len(items)))))

    slaves = []
    for i in range(n_slaves):
        cluster = rng.choice((1, 2, 3))
        models = [rng.choice((V100, A100, GTX)) for _ in range(rng.randint(0, 4))]
        slaves.append(
            SlaveState(
                name=f"s{i}",
                cluster_id=cluster,
                cluster_private=cluster == 3,
                cluster_owner_projects=frozenset({"lab"}) if cluster == 3 else frozenset(),
                online=rng.random() < 0.85,
                accepting_jobs=rng.random() < 0.85,
                gpus=tuple(GpuInfo(j, m) for j, m in enumerate(models)),
                cpu_ids=tuple(range(rng.randint(1, 8))),
                memory_gb=float(rng.randint(4, 32)),
                cuda_major=rng.choice((None, 10, 11, 12)),
                features=subset(("ssd", "ib"), 2),
                ports_in_use=subset(PORTS, 2) if rng.random() < 0.3 else frozenset(),
            )
        )
    names = [s.name for s in slaves]

    reservations = []
    for r in range(n_reservations):
        start = NOW + timedelta(seconds=rng.randint(-2 * DAY, 2 * DAY))
        reservations.append(
            ReservationWindow(
                id=f"R{r}",
                name=f"R{r}",
                cluster_id=rng.choice((1, 2)),
                start=start,
                end=start + timedelta(seconds=rng.randint(HOUR, 3 * DAY)),
                slave_names=subset(names, 2),
                gpu_count=maybe(rng.randint(0, 6)),
                entitled_projects=subset(PROJECTS, 2),
                entitled_users=subset(USERS, 1),
            )
        )
    res_ids = [r.id for r in reservations]

    running = []
    for s in slaves:
        free_gpus = [g.index for g in s.gpus]
        free_cpus = list(s.cpu_ids)
        free_mem = s.memory_gb
        for _ in range(rng.randint(0, max_running)):
            if not free_cpus:
                break
            g = rng.randint(0, len(free_gpus))
            c = rng.randint(1, len(free_cpus))
            m = float(rng.randint(0, int(free_mem)))
            gpu_ids, free_gpus = free_gpus[:g], free_gpus[g:]
            cpu_ids, free_cpus = free_cpus[:c], free_cpus[c:]
            free_mem -= m
            running.append(
                RunningJob(
                    id=f"r{len(running)}",
                    user=rng.choice(USERS),
                    project=rng.choice(PROJECTS),
                    slave=s.name,
                    gpu_ids=tuple(gpu_ids),
                    cpu_ids=tuple(cpu_ids),
                    memory_gb=m,
                    started_at=NOW - timedelta(seconds=rng.randint(0, 3 * DAY)),
                    run_seconds_before=rng.choice((0, 0, HOUR)),
                    min_duration_s=rng.choice((0, HOUR, DAY, 2 * DAY)),
                    max_duration_s=rng.choice((2 * HOUR, DAY, 14 * DAY)),
                    restartable=rng.random() < 0.5,
                    reservation_ids=subset(res_ids, 1),
                    bucket=maybe(rng.choice(sorted(BUCKETS)), 0.2),
                    ignoring_reservation_ids=subset(res_ids, 1),
                    halting=rng.random() < 0.1,
                )
            )

    queued = []
    for q in range(n_queued):
        interactive = rng.random() < 0.15
        min_s = rng.choice((0, 30 * 60, HOUR, DAY, 7 * DAY))
        bucket = maybe(rng.choice(sorted(BUCKETS)), 0.3)
        queued.append(
            QueuedJob(
                id=f"q{q}",
                user=rng.choice(USERS),
                project=rng.choice(PROJECTS),
                submitted_at=NOW - timedelta(seconds=rng.randint(0, DAY)),
                gpus=rng.randint(0, 5),
                cpus=rng.randint(1, 9),
                memory_gb=float(rng.randint(1, 40)),
                gpu_models=tuple(rng.sample(("V100", "a100", "1080", "H100"), rng.randint(0, 2))),
                features=subset(("ssd", "ib"), 1),
                min_cuda=maybe(rng.randint(10, 13)),
                cluster_id=maybe(rng.randint(1, 4)),
                slave_name=maybe(rng.choice(names + ["zz"]), 0.2),
                interactive=interactive,
                restartable=rng.random() < 0.5,
                min_duration_s=min_s,
                max_duration_s=max(min_s, rng.choice((HOUR, DAY, 14 * DAY))),
                not_before=None
                if interactive
                else rng.choice((None, None, NOW + timedelta(hours=1), NOW - timedelta(hours=1))),
                not_after=rng.choice((None, None, NOW, NOW + timedelta(days=1))),
                bucket=(bucket, BUCKETS[bucket]) if bucket else None,
                reservation_ids=subset(res_ids, 2),
                host_ports=subset(PORTS, 2) if rng.random() < 0.3 else frozenset(),
                halt_wait_since=maybe(NOW - timedelta(seconds=rng.choice((10, 120))), 0.2)
                if interactive
                else None,
            )
        )
    usage = {u: float(rng.choice((0, 10, HOUR, 100 * HOUR, 1e6))) for u in USERS}
    return Snapshot(
        now=NOW,
        slaves=tuple(slaves),
        running=tuple(running),
        queued=tuple(queued),
        reservations=tuple(reservations),
        usage=usage,
        config=config,
    )


def covered(res: ReservationWindow, s: SlaveState) -> bool:
    return s.cluster_id == res.cluster_id and (not res.slave_names or s.name in res.slave_names)


def entitled(res, user, project, ids) -> bool:
    return res.admits(user=user, project=project, reservation_ids=ids)


def check_never_over_allocates(snap: Snapshot, result) -> None:
    by_name = {s.name: s for s in snap.slaves}
    jobs = {j.id: j for j in snap.queued}
    gpus, cpus, mem = defaultdict(list), defaultdict(list), defaultdict(float)
    for r in snap.running:
        gpus[r.slave] += r.gpu_ids
        cpus[r.slave] += r.cpu_ids
        mem[r.slave] += r.memory_gb
    for start in result.starts:
        job = jobs[start.job_id]
        assert len(start.gpu_ids) == job.gpus and len(start.cpu_ids) == job.cpus
        gpus[start.slave] += start.gpu_ids
        cpus[start.slave] += start.cpu_ids
        mem[start.slave] += job.memory_gb
    for name, ids in gpus.items():
        s = by_name[name]
        assert len(ids) == len(set(ids)), f"GPU given twice on {name}"
        assert set(ids) <= {g.index for g in s.gpus}
        assert len(cpus[name]) == len(set(cpus[name])), f"CPU given twice on {name}"
        assert set(cpus[name]) <= set(s.cpu_ids)
        assert mem[name] <= s.memory_gb + 1e-6


def check_starts_respect_the_request_and_the_slave(snap: Snapshot, result) -> None:
    by_name = {s.name: s for s in snap.slaves}
    jobs = {j.id: j for j in snap.queued}
    for start in result.starts:
        job, s = jobs[start.job_id], by_name[start.slave]
        assert s.online and s.accepting_jobs
        assert job.cluster_id in (None, s.cluster_id)
        assert job.slave_name in (None, s.name)
        assert job.min_cuda is None or (s.cuda_major or -1) >= job.min_cuda
        assert job.features <= s.features
        models = {g.index: g.model.lower() for g in s.gpus}
        wanted = [m.lower() for m in job.gpu_models]
        for gpu in start.gpu_ids:
            assert not wanted or any(w in models[gpu] for w in wanted)
        if s.cluster_private and job.project not in s.cluster_owner_projects:
            assert job.cluster_id is None
            assert job.min_duration_s <= snap.config.private_guest_max_min_duration_s
        assert job.not_before is None or job.not_before <= snap.now
        assert job.not_after is None or job.not_after > snap.now


def check_reservations_are_respected(snap: Snapshot, result) -> None:
    by_name = {s.name: s for s in snap.slaves}
    jobs = {j.id: j for j in snap.queued}
    leaving = {d.job_id for d in result.halts} | {d.job_id for d in result.cancels}
    for res in snap.reservations:
        if res.end <= snap.now:
            continue
        active = res.start <= snap.now
        total = sum(len(s.gpus) for s in snap.slaves if covered(res, s))
        limit = total - (total if res.gpu_count is None else min(res.gpu_count, total))
        new_gpus = 0
        for start in result.starts:
            job = jobs[start.job_id]
            if not covered(res, by_name[start.slave]):
                continue
            if entitled(res, job.user, job.project, job.reservation_ids):
                continue
            if active:
                assert res.gpu_count is not None, "started inside a whole-slave reservation"
                new_gpus += job.gpus
            elif snap.now + timedelta(seconds=job.max_duration_s) > res.start:
                if res.gpu_count is None:
                    # Only as a guest that may be halted when the window opens.
                    assert snap.now + timedelta(seconds=job.min_duration_s) <= res.start
                    assert res.id in start.ignoring_reservation_ids
        if active and res.gpu_count is not None and new_gpus:
            held = sum(
                len(r.gpu_ids)
                for r in snap.running
                if r.slave in by_name
                and covered(res, by_name[r.slave])
                and not r.halting
                and r.id not in leaving
                and not entitled(res, r.user, r.project, r.reservation_ids)
            )
            assert held + new_gpus <= limit


def check_halts_and_cancels_are_legitimate(snap: Snapshot, result) -> None:
    runs = {r.id: r for r in snap.running}
    halted = [d.job_id for d in result.halts]
    assert len(halted) == len(set(halted)), "a job is halted twice"
    for halt in result.halts:
        job = runs[halt.job_id]
        assert not job.halting
        assert (snap.now - job.started_at).total_seconds() >= job.min_duration_s
        assert halt.job_id in halt.halt_info.halted_job_uuids
        assert halt.halt_info.slave_name == job.slave
        assert halt.halt_info.reason == halt.reason
    for cancel in result.cancels:
        job = runs[cancel.job_id]
        run = job.run_seconds_before + (snap.now - job.started_at).total_seconds()
        assert run >= job.max_duration_s
    assert not set(halted) & {d.job_id for d in result.cancels}


def check_every_waiting_job_is_explained(snap: Snapshot, result) -> None:
    done = {d.job_id for d in result.starts} | {d.job_id for d in result.fails}
    assert len(result.starts) + len(result.fails) == len(done), "a job decided twice"
    for job in snap.queued:
        if job.id in done:
            assert job.id not in result.explanations
        else:
            reasons = result.explanations[job.id]
            assert reasons and all(isinstance(r, str) and r for r in reasons)
            if job.interactive:
                # Start, fail, or wait a bounded time for jobs halted to make room for it.
                assert HOLDING.match(reasons[0]), reasons
                assert reasons[1].startswith("interactive job: starts when they end"), reasons
    assert set(result.explanations) <= {j.id for j in snap.queued}


def check_buckets_never_overflow(snap: Snapshot, result) -> None:
    jobs = {j.id: j for j in snap.queued}
    active = defaultdict(int)
    for r in snap.running:
        if r.bucket:
            active[r.bucket] += 1
    for start in result.starts:
        bucket = jobs[start.job_id].bucket
        if bucket:
            active[bucket[0]] += 1
            assert active[bucket[0]] <= bucket[1]


HELD = ("waiting for", "bucket ", "user limit")
HOLDING = re.compile(r"waiting for \d+ (halted|ending) job\(s\) on (\S+) to free room")


def ports_taken(snap: Snapshot, result) -> dict[str, set[int]]:
    """Fixed host ports in use per slave after the cycle: running jobs, starts, room held."""
    jobs = {j.id: j for j in snap.queued}
    taken = defaultdict(set)
    for s in snap.slaves:
        taken[s.name].update(s.ports_in_use)
    for start in result.starts:
        taken[start.slave].update(jobs[start.job_id].host_ports)
    for job_id, reasons in result.explanations.items():
        held = HOLDING.match(reasons[0])
        if held:
            taken[held.group(2)].update(jobs[job_id].host_ports)
    return taken


def check_host_ports_are_never_shared(snap: Snapshot, result) -> None:
    """Issue 15 item 6: two jobs never get the same fixed host port on one slave."""
    jobs = {j.id: j for j in snap.queued}
    used = {s.name: set(s.ports_in_use) for s in snap.slaves}
    for start in result.starts:
        ports = jobs[start.job_id].host_ports
        assert not ports & used[start.slave], f"{start.job_id}: port taken on {start.slave}"
        used[start.slave] |= ports
    for job_id, reasons in result.explanations.items():
        held = HOLDING.match(reasons[0])
        if held and jobs[job_id].host_ports:
            slave_name = held.group(2)
            assert not jobs[job_id].host_ports & used[slave_name], "room held on a taken port"
            used[slave_name] |= jobs[job_id].host_ports


def check_no_idle_room_for_waiting_jobs(snap: Snapshot, result) -> None:
    """A job left waiting for room really has none on any plain slave (public, unreserved)."""
    jobs = {j.id: j for j in snap.queued}
    used_gpus, used_cpus, used_mem = defaultdict(set), defaultdict(set), defaultdict(float)
    for r in snap.running:
        used_gpus[r.slave].update(r.gpu_ids)
        used_cpus[r.slave].update(r.cpu_ids)
        used_mem[r.slave] += r.memory_gb
    for start in result.starts:
        used_gpus[start.slave].update(start.gpu_ids)
        used_cpus[start.slave].update(start.cpu_ids)
        used_mem[start.slave] += jobs[start.job_id].memory_gb
    live = [r for r in snap.reservations if r.end > snap.now]
    plain = [
        s
        for s in snap.slaves
        if s.online
        and s.accepting_jobs
        and not s.cluster_private
        and not any(covered(r, s) for r in live)
    ]
    taken = ports_taken(snap, result)
    for job_id, reasons in result.explanations.items():
        if any(line.startswith(HELD) for line in reasons):
            continue
        job = jobs[job_id]
        wanted = [m.lower() for m in job.gpu_models] if job.gpus else []
        for s in plain:
            if job.cluster_id not in (None, s.cluster_id) or job.slave_name not in (None, s.name):
                continue
            if job.min_cuda is not None and (s.cuda_major or -1) < job.min_cuda:
                continue
            if not job.features <= s.features:
                continue
            free_gpus = [
                g
                for g in s.gpus
                if g.index not in used_gpus[s.name]
                and (not wanted or any(w in g.model.lower() for w in wanted))
            ]
            free_cpus = set(s.cpu_ids) - used_cpus[s.name]
            free_mem = s.memory_gb - used_mem[s.name]
            has_room = (
                len(free_gpus) >= job.gpus
                and len(free_cpus) >= job.cpus
                and free_mem + 1e-9 >= job.memory_gb
            )
            if has_room and job.host_ports & taken[s.name]:
                # Only its fixed host port keeps it off: the explanation must say so.
                assert any(line.startswith("host port") for line in reasons), reasons
                continue
            assert not has_room, f"{job_id} waits ({reasons}) although {s.name} has room"


@SETTINGS
@given(snapshots())
def test_cycle_invariants(snap):
    """No over-allocation, no start inside a reservation one is not entitled to, no halt before
    minDuration, every waiting job explained, buckets respected, requests honoured."""
    result = run_cycle(snap)
    check_never_over_allocates(snap, result)
    check_starts_respect_the_request_and_the_slave(snap, result)
    check_reservations_are_respected(snap, result)
    check_halts_and_cancels_are_legitimate(snap, result)
    check_every_waiting_job_is_explained(snap, result)
    check_buckets_never_overflow(snap, result)
    check_no_idle_room_for_waiting_jobs(snap, result)
    check_host_ports_are_never_shared(snap, result)


@SETTINGS
@given(snapshots())
def test_batch_jobs_never_change_what_interactive_jobs_get(snap):
    check_batch_jobs_never_change_what_interactive_jobs_get(snap)


def check_batch_jobs_never_change_what_interactive_jobs_get(snap: Snapshot) -> None:
    """Issue 15 item 7: interactive jobs are placed before batch jobs, so removing the batch jobs
    (except private cluster owners', whose demand keeps guests off) changes nothing for them."""
    interactive = {j.id for j in snap.queued if j.interactive}
    fewer = Snapshot(
        now=snap.now,
        slaves=snap.slaves,
        running=snap.running,
        queued=tuple(j for j in snap.queued if j.interactive or j.project == "lab"),
        reservations=snap.reservations,
        usage=snap.usage,
        config=snap.config,
    )

    def theirs(result):
        return (
            [d for d in result.starts if d.job_id in interactive],
            sorted(d.job_id for d in result.fails if d.job_id in interactive),
            [d for d in result.halts if set(d.halt_info.started_job_uuids) & interactive],
            {k: v for k, v in result.explanations.items() if k in interactive},
        )

    assert theirs(run_cycle(snap)) == theirs(run_cycle(fewer))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(snapshots(), st.randoms(use_true_random=False))
def test_deterministic_whatever_the_input_order(snap, rnd: random.Random):
    first = run_cycle(snap)
    assert run_cycle(snap) == first

    def shuffled(items):
        items = list(items)
        rnd.shuffle(items)
        return tuple(items)

    other = Snapshot(
        now=snap.now,
        slaves=shuffled(snap.slaves),
        running=shuffled(snap.running),
        queued=shuffled(snap.queued),
        reservations=shuffled(snap.reservations),
        usage=dict(reversed(list(snap.usage.items()))),
        config=snap.config,
    )
    assert run_cycle(other) == first


@st.composite
def contended(draw) -> Snapshot:
    """Busy, alike slaves and small jobs that contend for GPUs and fixed host ports: the random
    snapshots above rarely make an interactive job halt or a port the only obstacle."""
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    n_slaves = draw(st.integers(1, 4))
    slaves = [
        SlaveState(
            name=f"s{i}",
            cluster_id=1,
            gpus=tuple(GpuInfo(j, V100) for j in range(4)),
            cpu_ids=tuple(range(8)),
            memory_gb=64.0,
            cuda_major=12,
            ports_in_use=frozenset(rng.sample(PORTS, rng.randint(0, 2))),
        )
        for i in range(n_slaves)
    ]
    running = []
    for s in slaves:
        free = [0, 1, 2, 3]
        while free and rng.random() < 0.8:
            n = rng.randint(1, 2)
            take, free = free[:n], free[n:]
            running.append(
                RunningJob(
                    id=f"r{len(running)}",
                    user=rng.choice(USERS),
                    project="p1",
                    slave=s.name,
                    gpu_ids=tuple(take),
                    cpu_ids=(),
                    memory_gb=1.0,
                    started_at=NOW - timedelta(seconds=rng.choice((60, DAY))),
                    min_duration_s=rng.choice((0, HOUR, 2 * DAY)),
                    restartable=rng.random() < 0.5,
                    halting=rng.random() < 0.2,
                )
            )
    queued = []
    for q in range(draw(st.integers(1, 10))):
        interactive = rng.random() < 0.5
        queued.append(
            QueuedJob(
                id=f"q{q}",
                user=rng.choice(USERS),
                project="p1",
                submitted_at=NOW - timedelta(seconds=rng.choice((5, HOUR))),
                gpus=rng.randint(0, 4),
                interactive=interactive,
                min_duration_s=HOUR,
                max_duration_s=DAY,
                host_ports=frozenset(rng.sample(PORTS, rng.randint(0, 2)))
                if rng.random() < 0.6
                else frozenset(),
                halt_wait_since=maybe_since(rng) if interactive else None,
            )
        )
    return Snapshot(
        now=NOW,
        slaves=tuple(slaves),
        running=tuple(running),
        queued=tuple(queued),
        usage={u: float(rng.choice((0, HOUR, 1e6))) for u in USERS},
        config=SchedulerConfig(max_interactive_halts_per_cycle=draw(st.integers(0, 4))),
    )


def maybe_since(rng: random.Random):
    return rng.choice((None, None, NOW - timedelta(seconds=10), NOW - timedelta(seconds=120)))


@SETTINGS
@given(contended())
def test_contended_cycle_invariants(snap):
    """Host ports never shared, interactive jobs start, wait only behind halts, or fail."""
    result = run_cycle(snap)
    check_never_over_allocates(snap, result)
    check_halts_and_cancels_are_legitimate(snap, result)
    check_every_waiting_job_is_explained(snap, result)
    check_no_idle_room_for_waiting_jobs(snap, result)
    check_host_ports_are_never_shared(snap, result)
    check_batch_jobs_never_change_what_interactive_jobs_get(snap)
