"""The indexed Job columns derived from a canonical v2 request."""

from core.timefmt import parse_utc_z
from jobs.spec import duration_seconds, tmpfs_gb


def columns_from_request(request: dict) -> dict:
    resources = request["resources"]
    scheduling = request["scheduling"]
    bucket = scheduling.get("maxSimultaneousJobs") or {}
    return {
        "gpus": resources["gpus"],
        "cpus": resources["cpus"],
        "cpu_memory_gb": resources["cpuMemoryGb"],
        "tmpfs_gb": tmpfs_gb(request),
        "gpu_memory_gb": resources.get("gpuMemoryGb"),
        "gpu_models": list(resources.get("gpuModel") or []),
        "features": list(resources.get("features") or []),
        "min_cuda_version": resources.get("minCudaVersion"),
        "requested_cluster_id": resources.get("clusterId"),
        "requested_slave_name": resources.get("slaveName") or "",
        "interactive": scheduling["interactive"],
        "restartable": scheduling["restartable"],
        "allow_halt_without_signal": scheduling["allowHaltWithoutSignal"],
        "min_duration_s": duration_seconds(request, "minDuration"),
        "max_duration_s": duration_seconds(request, "maxDuration"),
        "not_before": parse_utc_z(scheduling.get("notBefore")),
        "not_after": parse_utc_z(scheduling.get("notAfter")),
        "bucket_name": bucket.get("bucketName") or "",
        "bucket_max": bucket.get("bucketMax"),
        "reservation_ids": list(scheduling.get("reservationIds") or []),
    }
