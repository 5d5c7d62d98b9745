"""Resource samples of running jobs: CPU, memory and network from the engine, GPU load on
NVIDIA slaves, and the idle-GPU review.

The slave watcher calls ``slave_samples_collect`` for each slave every
``PORTAL_METRICS_INTERVAL_S``. Counters are cumulative, so each sample stores the counters and
the rates since the job's previous sample. GPU load is read once per slave and interval by a
probe container (``clusters.runtime.probe.gpu_utilisation``) and shared out by GPU index, only
on slaves whose GPUs the NVIDIA runtime discovered (declared GPUs have nothing to read).

Compact: a job keeps at most ``PORTAL_METRICS_KEEP`` samples; past that, every second one of
the older half is dropped, so a long job keeps its whole curve at a coarser step.

Idle-GPU review: a job holding GPUs whose every sample over ``PORTAL_GPU_IDLE_WINDOW_S`` stayed
below ``PORTAL_GPU_IDLE_PERCENT`` is flagged once (``Job.gpu_idle_flagged_at``): a warning in
its history, a line on its page, a mail to its owner, and a row in the admins' list. Nothing
is stopped automatically.
"""

import logging
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.core.mail import send_mail
from django.db import connections
from django.db.models import Q
from django.utils import timezone

from clusters.models import Slave
from clusters.runtime.errors import RuntimeFailure
from clusters.runtime.probe import gpu_utilisation
from clusters.services import engine_for
from core.timefmt import utc_z
from jobs.models import Job, JobEvent, JobSample
from jobs.states import HOLDS_RESOURCES, JobStatus

log = logging.getLogger(__name__)


def _rate(now_value: int, before_value: int, seconds: float) -> float:
    if seconds <= 0 or now_value < before_value:  # a restarted counter starts over
        return 0.0
    return (now_value - before_value) / seconds


def _gpu_readings(engine, slave: Slave) -> dict[int, dict]:
    if slave.gpu_mode != Slave.GpuMode.NVIDIA or not slave.gpus.exists():
        return {}
    try:
        readings = gpu_utilisation(engine, image=settings.PORTAL_GPU_PROBE_IMAGE)
    except RuntimeFailure as failure:
        log.info("GPU utilisation of %s not read: %s", slave.name, failure)
        return {}
    return {
        g.index: {"index": g.index, "percent": g.percent, "memoryUsedMb": g.memory_used_mb}
        for g in readings
    }


def slave_samples_collect(*, slave: Slave, now: datetime | None = None) -> int:
    """One sample of every running job on the slave; how many were written."""
    jobs = list(
        Job.objects.filter(slave=slave, status=JobStatus.RUNNING)
        .exclude(container_id="")
        .only("pk", "container_id", "gpu_ids", "gpu_idle_flagged_at", "name", "uuid", "owner")
    )
    if not jobs:
        return 0
    written = 0
    with engine_for(slave) as engine:
        gpus = _gpu_readings(engine, slave) if any(job.gpu_ids for job in jobs) else {}
        for job in jobs:
            try:
                stats = engine.stats(job.container_id)
            except RuntimeFailure:
                continue  # ended meanwhile, or the engine hiccuped: the next interval reads it
            at = now or timezone.now()
            previous = job.samples.order_by("-time").first()
            if previous and (at - previous.time).total_seconds() < _min_step():
                continue  # another watcher process (scale-out) sampled it just now
            seconds = (at - previous.time).total_seconds() if previous else 0.0
            JobSample.objects.create(
                job=job,
                time=at,
                cpu_percent=round(
                    _rate(stats.cpu_ns, previous.cpu_ns if previous else 0, seconds) / 1e7, 1
                ),
                memory_mb=stats.memory_bytes // (1024 * 1024),
                net_rx_kbps=round(
                    _rate(stats.net_rx_bytes, previous.net_rx_bytes if previous else 0, seconds)
                    / 1000,
                    2,
                ),
                net_tx_kbps=round(
                    _rate(stats.net_tx_bytes, previous.net_tx_bytes if previous else 0, seconds)
                    / 1000,
                    2,
                ),
                gpus=[gpus[int(i)] for i in job.gpu_ids or [] if int(i) in gpus],
                cpu_ns=stats.cpu_ns,
                net_rx_bytes=stats.net_rx_bytes,
                net_tx_bytes=stats.net_tx_bytes,
            )
            written += 1
            _thin(job)
            if job.gpu_ids and job.gpu_idle_flagged_at is None:
                job_gpu_idle_review(job=job, now=at)
    return written


def _min_step() -> float:
    return settings.PORTAL_METRICS_INTERVAL_S / 2


def _thin(job: Job) -> None:
    # One count per sample; the ids are read only when the job is over its share.
    if job.samples.count() <= settings.PORTAL_METRICS_KEEP:
        return
    ids = list(job.samples.order_by("time", "id").values_list("pk", flat=True))
    older = ids[: len(ids) // 2]
    JobSample.objects.filter(pk__in=older[1::2]).delete()


def gpu_samples_idle(samples: list[JobSample], *, threshold: float) -> bool:
    """Every GPU reading of every sample is below the threshold (and there is one at all)."""
    readings = [g.get("percent") for s in samples for g in s.gpus]
    return bool(readings) and all(p is not None and p < threshold for p in readings)


def job_gpu_idle_review(*, job: Job, now: datetime) -> bool:
    """Flag the job when its GPUs stayed idle over the whole review window."""
    window = timedelta(seconds=settings.PORTAL_GPU_IDLE_WINDOW_S)
    first = job.samples.order_by("time").values_list("time", flat=True).first()
    if first is None or now - first < window:
        return False  # not watched long enough to say
    recent = list(job.samples.filter(time__gte=now - window))
    if not gpu_samples_idle(recent, threshold=settings.PORTAL_GPU_IDLE_PERCENT):
        return False
    if Job.objects.filter(pk=job.pk, gpu_idle_flagged_at=None).update(gpu_idle_flagged_at=now) != 1:
        return False
    job.gpu_idle_flagged_at = now
    minutes = settings.PORTAL_GPU_IDLE_WINDOW_S // 60
    message = (
        f"GPUs idle: below {settings.PORTAL_GPU_IDLE_PERCENT}% for {minutes} min. "
        "Other users are waiting for GPUs: please check the job or cancel it."
    )
    JobEvent.objects.create(job=job, time=now, type=JobEvent.Type.WARNING, message=message)
    owner = Job.objects.filter(pk=job.pk).values_list("owner__email", flat=True).first()
    if owner:
        send_mail(
            f"[GPU Portal] job {job.name}: GPUs idle",
            f"Job {job.name} ({job.uuid}): {message}",
            None,
            [owner],
            fail_silently=True,
        )
    return True


def job_samples_series(job: Job) -> dict:
    """The job's samples as columns for a chart (times in UTC ISO)."""
    samples = list(job.samples.order_by("time", "id"))
    gpu_indexes = sorted({g["index"] for s in samples for g in s.gpus})
    return {
        "time": [utc_z(s.time) for s in samples],
        "cpuPercent": [s.cpu_percent for s in samples],
        "memoryMb": [s.memory_mb for s in samples],
        "netRxKbps": [s.net_rx_kbps for s in samples],
        "netTxKbps": [s.net_tx_kbps for s in samples],
        "gpus": {
            str(i): {
                "percent": [_gpu(s, i, "percent") for s in samples],
                "memoryUsedMb": [_gpu(s, i, "memoryUsedMb") for s in samples],
            }
            for i in gpu_indexes
        },
        "gpuIdleFlaggedAt": utc_z(job.gpu_idle_flagged_at),
    }


def cluster_utilisation_series(
    *, cluster_id: int, since: datetime, until: datetime, bucket_s: int = 600
) -> dict:
    """What a cluster's jobs used over time, per bucket: CPU cores busy, memory in GB, GPUs
    held and GPUs busy (the sum of utilisation / 100: two GPUs at 50 % count as one busy GPU).

    Every figure is a mean over the bucket's time, weighted by how long each job ran in it: a
    job's samples give its mean use while it ran, times the share of the bucket it ran. GPUs
    held come from the runs themselves (start to end, ``held_gpus_per_bucket``), not from the
    samples: counting each job with a sample in a bucket once added up jobs that ran one after
    the other (nine short jobs on a 2-GPU cluster read as 9 GPUs held).
    """
    runs = _cluster_runs(cluster_id=cluster_id, since=since, until=until)
    rows = JobSample.objects.filter(
        job__slave__cluster_id=cluster_id, time__gte=since, time__lt=until
    ).values_list("job_id", "time", "cpu_percent", "memory_mb", "gpus")
    per_bucket: dict[int, dict[int, list]] = {}
    for job_id, at, cpu, memory, gpus in rows.iterator():
        bucket = int((at - since).total_seconds() // bucket_s)
        per_bucket.setdefault(bucket, {}).setdefault(job_id, []).append((cpu, memory, gpus))
    held = held_gpus_per_bucket(
        [(start, end, gpus) for start, end, gpus in runs.values()],
        since=since,
        until=until,
        bucket_s=bucket_s,
    )
    series: dict[str, list[Any]] = {
        "time": [],
        "cpuCores": [],
        "memoryGb": [],
        "gpusHeld": held,
        "gpusBusy": [],
    }
    for bucket in range(len(held)):
        jobs = per_bucket.get(bucket, {})
        start = since + timedelta(seconds=bucket * bucket_s)
        end = min(start + timedelta(seconds=bucket_s), until)
        # A job without a recorded run (none should be) counts over the whole bucket.
        share = {
            job_id: _overlap_share(runs[job_id], start, end) if job_id in runs else 1.0
            for job_id in jobs
        }
        series["time"].append(utc_z(start))
        series["cpuCores"].append(
            round(sum(share[j] * _mean(s[0] for s in v) for j, v in jobs.items()) / 100, 2)
        )
        series["memoryGb"].append(
            round(sum(share[j] * _mean(s[1] for s in v) for j, v in jobs.items()) / 1024, 2)
        )
        series["gpusBusy"].append(
            round(
                sum(
                    share[j] * _mean(sum((g.get("percent") or 0) for g in s[2]) for s in v)
                    for j, v in jobs.items()
                )
                / 100,
                2,
            )
        )
    return series


def _cluster_runs(
    *, cluster_id: int, since: datetime, until: datetime
) -> dict[int, tuple[datetime, datetime, int]]:
    """job id -> (start, end, GPUs) of the cluster's runs that overlap [since, until); a run
    still holding its GPUs ends at ``until``. One query."""
    rows = (
        Job.objects.filter(slave__cluster_id=cluster_id, started_at__isnull=False)
        .filter(started_at__lt=until)
        .filter(
            Q(ended_at__gt=since)
            | Q(ended_at__isnull=True, status__in=HOLDS_RESOURCES)
            | Q(ended_at__isnull=True, status_updated__gt=since)
        )
        .order_by()
        .values_list("pk", "started_at", "ended_at", "status", "status_updated", "gpus")
    )
    runs = {}
    for pk, started, ended, status, updated, gpus in rows:
        assert started is not None  # filtered: started_at__isnull=False
        end = Job.run_end_of(status=status, ended_at=ended, status_updated=updated, now=until)
        runs[pk] = (started, min(end, until), gpus)
    return runs


def _overlap_share(run: tuple[datetime, datetime, int], start: datetime, end: datetime) -> float:
    length = (end - start).total_seconds()
    if length <= 0:  # the bucket that begins at ``until``: the run as of that instant
        return 1.0 if run[0] <= start <= run[1] else 0.0
    overlap = (min(run[1], end) - max(run[0], start)).total_seconds()
    return max(0.0, overlap) / length


def held_gpus_per_bucket(
    runs: Iterable[tuple[datetime, datetime, int]],
    *,
    since: datetime,
    until: datetime,
    bucket_s: int,
) -> list[float]:
    """GPUs held per bucket of [since, until): the time-weighted mean of the GPUs the runs
    (start, end, GPUs) held, so never more than the most held at once. The last bucket is
    cut at ``until``; one that begins at ``until`` counts the runs holding GPUs at that
    instant (end included: a run still going ends at ``until``). Pure: no query."""
    runs = list(runs)
    held = []
    for bucket in range(int((until - since).total_seconds() // bucket_s) + 1):
        start = since + timedelta(seconds=bucket * bucket_s)
        end = min(start + timedelta(seconds=bucket_s), until)
        held.append(round(sum(run[2] * _overlap_share(run, start, end) for run in runs), 2))
    return held


def _mean(values) -> float:
    values = list(values)
    return sum(values) / len(values) if values else 0.0


def _gpu(sample: JobSample, index: int, key: str):
    for g in sample.gpus:
        if g["index"] == index:
            return g.get(key)
    return None


def metrics_sampler_loop(stop, *, interval_s: float | None = None) -> None:
    """The watcher's sampling thread: every interval, one pass over the online slaves."""
    interval = interval_s or settings.PORTAL_METRICS_INTERVAL_S
    while not stop.wait(interval):
        try:
            for slave in Slave.objects.filter(online=True):
                try:
                    slave_samples_collect(slave=slave)
                except Exception:  # one slave's trouble must not end the others' sampling
                    log.exception("sampling %s failed", slave.name)
        except Exception:  # the database itself: try again next interval
            log.exception("sampling pass failed")
        finally:
            # Give the connection back between passes: the watcher process has a small pool
            # (PORTAL_DB_POOL_MAX) shared with its slave threads, and this thread mostly sleeps.
            connections.close_all()
