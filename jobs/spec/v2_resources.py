"""``request.resources``: what a job needs from a slave (docs/gpulab-format.md, section 1)."""

from __future__ import annotations

from .checks import Errors, check_str, read_int, read_list, read_object, read_str

RESOURCE_FIELDS = (
    "cpus",
    "gpus",
    "cpuMemoryGb",
    "gpuMemoryGb",
    "gpuModel",
    "features",
    "minCudaVersion",
    "clusterId",
    "slaveName",
    "slaveInstanceId",
)

# Long enough for any GPU model or feature name; keeps stored filters bounded.
MAX_FILTER_LENGTH = 200


def _filter_item(item: object, path: str, errs: Errors) -> str | None:
    # gpuModel and features items are substrings to match: one letter would match nearly anything.
    return check_str(item, path, errs, min_length=2, max_length=MAX_FILTER_LENGTH)


def normalize_resources(value: object, path: str, errs: Errors) -> dict | None:
    """Validate request.resources and return it with every key present (absent ones null/[])."""
    f = read_object(value, path, errs, fields=RESOURCE_FIELDS)
    if f is None:
        return None
    return {
        "cpus": read_int(f, "cpus", errs, required=True, above=0),
        "gpus": read_int(f, "gpus", errs, required=True, minimum=0),
        # GB here are GiB (1024^3 bytes), as in GPULab.
        "cpuMemoryGb": read_int(f, "cpuMemoryGb", errs, required=True, above=0),
        "gpuMemoryGb": read_int(f, "gpuMemoryGb", errs, above=1),
        "gpuModel": read_list(f, "gpuModel", errs, _filter_item, bare_ok=True),
        "features": read_list(f, "features", errs, _filter_item, bare_ok=True),
        "minCudaVersion": read_int(f, "minCudaVersion", errs, minimum=0),
        "clusterId": read_int(f, "clusterId", errs, minimum=0),
        "slaveName": read_str(f, "slaveName", errs, min_length=1, max_length=255),
        "slaveInstanceId": read_str(f, "slaveInstanceId", errs, min_length=1, max_length=255),
    }
