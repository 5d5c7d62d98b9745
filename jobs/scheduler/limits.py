"""maxSimultaneousJobs buckets and per-user limits, counted over the cycle.

Counts start from the snapshot (every active job, halting ones included: they still hold their
resources) and grow with each start of the cycle, so two jobs of a full bucket never both start.
"""

from __future__ import annotations

from collections import Counter

from .model import QueuedJob, Snapshot


class Limits:
    """Mutable counters for one cycle."""

    __slots__ = ("_buckets", "_user_jobs", "_user_gpus", "_max_jobs", "_max_gpus")

    def __init__(self, snapshot: Snapshot) -> None:
        from_running = Counter(job.bucket for job in snapshot.running if job.bucket is not None)
        # The bridge may count buckets itself (all active states); names it does not mention
        # are counted from the running jobs of the snapshot.
        self._buckets: Counter[str] = Counter(from_running)
        for name, count in snapshot.bucket_counts.items():
            self._buckets[name] = int(count)
        self._user_jobs: Counter[str] = Counter(job.user for job in snapshot.running)
        self._user_gpus: Counter[str] = Counter()
        for job in snapshot.running:
            self._user_gpus[job.user] += len(job.gpu_ids)
        self._max_jobs = snapshot.config.per_user_max_running_jobs
        self._max_gpus = snapshot.config.per_user_max_gpus

    def blocked(self, job: QueuedJob) -> str | None:
        """Why a limit keeps this job queued now, or None."""
        if job.bucket is not None:
            name, maximum = job.bucket
            count = self._buckets[name]
            if count >= maximum:
                return f"bucket {name} full ({count}/{maximum})"
        if self._max_jobs is not None:
            count = self._user_jobs[job.user]
            if count >= self._max_jobs:
                return f"user limit: {count}/{self._max_jobs} running jobs"
        if self._max_gpus is not None and job.gpus:
            used = self._user_gpus[job.user]
            if used + job.gpus > self._max_gpus:
                return f"user limit: {used}/{self._max_gpus} GPUs in use, job needs {job.gpus}"
        return None

    def record_start(self, job: QueuedJob) -> None:
        if job.bucket is not None:
            self._buckets[job.bucket[0]] += 1
        self._user_jobs[job.user] += 1
        self._user_gpus[job.user] += job.gpus
