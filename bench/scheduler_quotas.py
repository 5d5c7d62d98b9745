"""The pure cycle at 10,000 queued x 1,000 slaves x 8 GPUs, without and with quotas on 200
projects and 2,000 users, interleaved in one run; prints one JSON object (docs/quotas.md).

    python bench/scheduler_quotas.py ROUNDS [--binding] [--soft]

Without ``--binding`` the limits are far above what anyone holds, so both cycles take the same
decisions and the difference is the quota filter's own cost; with it they hold jobs back.
``--soft`` adds soft levels on every third project (100 GPUs at once) and user (12 GPUs, 8 jobs
at once), below what many of them hold, and marks every tenth running job borrowed: the "with"
cycle then puts borrowers aside, places them last and halts borrowed jobs for in-limit ones.
"""

import json
import statistics
import sys
import time
from dataclasses import replace
from datetime import UTC, datetime

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent.parent))
from bench.synthetic import build_synthetic_snapshot
from jobs.scheduler.core import run_cycle
from jobs.scheduler.model import QuotaLimit

BIND = "--binding" in sys.argv
SOFT = "--soft" in sys.argv
G_P, J_P, G_U, J_U = (400, 300, 24, 12) if BIND else (10**6, 10**6, 10**6, 10**6)
snap = build_synthetic_snapshot(queued=10_000, slaves=1_000, gpus_per_slave=8)
quotas = [
    QuotaLimit(
        scope="project",
        project=f"proj{n:02d}" if n < 40 else f"extra{n}",
        gpus=G_P,
        jobs=J_P,
        gpu_hours=50_000.0 if BIND else 1e9,
        used_gpu_s=3600.0 * (n % 50) * 100,
        renews_at=datetime(2026, 7, 1, tzinfo=UTC),
    )
    for n in range(200)
]
quotas += [
    QuotaLimit(
        scope="user",
        user=f"user{n:03d}" if n < 300 else f"other{n}",
        gpus=G_U,
        jobs=J_U,
        gpu_hours=5_000.0 if BIND else 1e9,
        used_gpu_s=3600.0 * (n % 40) * 10,
        renews_at=datetime(2026, 7, 1, tzinfo=UTC),
    )
    for n in range(2000)
]
if SOFT:
    quotas = [
        replace(q, gpus_soft=100) if q.scope == "project" and n % 3 == 0 else q
        for n, q in enumerate(quotas[:200])
    ] + [
        replace(q, gpus_soft=12, jobs_soft=8) if n % 3 == 0 else q
        for n, q in enumerate(quotas[200:])
    ]
limited = replace(snap, quotas=tuple(quotas))
if SOFT:
    limited = replace(
        limited,
        running=tuple(
            replace(r, borrowed=True) if n % 10 == 0 else r for n, r in enumerate(snap.running)
        ),
    )
times = {"without": [], "with": []}
cpu = {"without": [], "with": []}  # this process's CPU seconds: less moved by a loaded machine
for _ in range(int(sys.argv[1])):
    for name, s in (("without", snap), ("with", limited)):
        t, c = time.perf_counter(), time.process_time()
        r = run_cycle(s)
        times[name].append(time.perf_counter() - t)
        cpu[name].append(time.process_time() - c)
        if name == "with":
            held = sum(
                1
                for lines in r.explanations.values()
                if lines and "of its" in lines[0] or lines and "GPU-hours this month" in lines[0]
            )
        else:
            starts0 = len(r.starts)
    starts1 = len(r.starts)
out = {
    k: {"best_s": round(min(v), 3), "median_s": round(statistics.median(v), 3)}
    for k, v in times.items()
}
out["ratio_median"] = round(out["with"]["median_s"] / out["without"]["median_s"], 3)
for k, v in cpu.items():
    out[k]["cpu_best_s"] = round(min(v), 3)
    out[k]["cpu_median_s"] = round(statistics.median(v), 3)
out["ratio_cpu_best"] = round(out["with"]["cpu_best_s"] / out["without"]["cpu_best_s"], 3)
out["ratio_cpu_median"] = round(out["with"]["cpu_median_s"] / out["without"]["cpu_median_s"], 3)
out["starts_without"], out["starts_with"], out["jobs_held_by_a_quota"] = starts0, starts1, held
if SOFT:
    out["borrowed_starts"] = sum(1 for s in r.starts if s.borrowed)
    out["halts_with"] = len(r.halts)
print(json.dumps(out))
