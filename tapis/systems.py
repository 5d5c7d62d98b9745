"""Tapis' Systems service as a read-only view of the portal (docs/tapis.md, "Systems and
Files"): each cluster is an execution system whose id is its GPULab cluster id as text ("1",
what a job's ``execSystemId`` names and what submitJob takes), and the archive of job outputs
is the storage system ``portal-archive`` (what a job's ``archiveSystemId`` names, read through
the Files routes). Nothing here changes a cluster: admins manage them in the Django admin.
"""

from __future__ import annotations

import re

from clusters.models import Cluster
from core.timefmt import utc_z
from jobs.execution.container_spec import CONTAINER_WORKING_DIR
from tapis.shapes import ARCHIVE_SYSTEM, TENANT

SYSTEMS_LIST = "GET /api/tapis/v3/systems"
# A cluster id as text: ASCII digits only (str.isdigit() admits "²", which int() refuses).
_CLUSTER_ID = re.compile(r"[0-9]{1,9}")


def _cluster_number(value: str) -> int | None:
    return int(value) if _CLUSTER_ID.fullmatch(value) else None


def exec_system_cluster(value: str) -> tuple[int | None, str]:
    """The cluster an ``execSystemId`` names, or None and why not."""
    if value == ARCHIVE_SYSTEM:
        return None, f"{ARCHIVE_SYSTEM} stores job outputs and runs no jobs: name a cluster"
    number = _cluster_number(value)
    if number is None or not Cluster.objects.filter(pk=number).exists():
        return None, f"no execution system {value!r} ({SYSTEMS_LIST} lists them)"
    return number, ""


def _clusters():
    return Cluster.objects.prefetch_related("slaves__gpus").order_by("id")


def cluster_system(cluster: Cluster) -> dict:
    """A cluster as Tapis' ``TapisSystem``: an execution system running Docker containers in
    ``/job``; its slaves, GPUs and what they offer in ``notes``."""
    slaves = list(cluster.slaves.all())
    gpus = [gpu for slave in slaves for gpu in slave.gpus.all() if gpu.acquired]
    models: dict[str, int] = {}
    for gpu in gpus:
        models[gpu.model] = models.get(gpu.model, 0) + 1
    usable = [slave for slave in slaves if slave.accepting_jobs]
    hosts = sorted({slave.host for slave in slaves if slave.host})
    return {
        "tenant": TENANT,
        "id": str(cluster.id),
        "description": cluster.comment or f"GPULab cluster {cluster.id}",
        "systemType": "LINUX",
        "owner": None,
        "host": hosts[0] if hosts else None,
        "enabled": any(slave.online for slave in usable),
        "effectiveUserId": None,
        "defaultAuthnMethod": None,
        "rootDir": None,
        "canExec": True,
        "canRunBatch": False,
        "jobRuntimes": [{"runtimeType": "DOCKER", "version": None}],
        "jobWorkingDir": CONTAINER_WORKING_DIR,
        "jobCapabilities": [
            {
                "category": "HARDWARE",
                "name": name,
                "datatype": "INTEGER",
                "precedence": 100,
                "value": str(value),
            }
            for name, value in (
                ("gpus", len(gpus)),
                ("cpus", sum(slave.usable_cpus for slave in usable)),
                ("memoryMB", sum(slave.usable_memory_mb for slave in usable)),
            )
        ]
        + [
            {
                "category": "HARDWARE",
                "name": f"gpuModel:{model}",
                "datatype": "INTEGER",
                "precedence": 100,
                "value": str(count),
            }
            for model, count in sorted(models.items())
        ],
        "tags": ["private"] if cluster.is_private else [],
        "notes": {
            "private": cluster.is_private,
            "slaves": [
                {
                    "name": slave.name,
                    "online": slave.online,
                    "acceptingJobs": slave.accepting_jobs,
                    "gpus": sum(1 for gpu in slave.gpus.all() if gpu.acquired),
                    "cpus": slave.usable_cpus,
                    "memoryMB": slave.usable_memory_mb,
                    "lastSeen": utc_z(slave.last_seen),
                }
                for slave in slaves
            ],
        },
        "isPublic": not cluster.is_private,
        "deleted": False,
        "created": None,
        "updated": None,
    }


def archive_system() -> dict:
    """The archive of job outputs as a storage system: ``jobs/<uuid>/outputs/...``."""
    return {
        "tenant": TENANT,
        "id": ARCHIVE_SYSTEM,
        "description": "the archive of job outputs: jobs/<uuid>/outputs (Files routes)",
        "systemType": "LINUX",
        "owner": None,
        "host": None,
        "enabled": True,
        "effectiveUserId": None,
        "defaultAuthnMethod": None,
        "rootDir": "/",
        "canExec": False,
        "canRunBatch": False,
        "jobRuntimes": None,
        "jobWorkingDir": None,
        "jobCapabilities": [],
        "tags": [],
        "notes": {},
        "isPublic": True,
        "deleted": False,
        "created": None,
        "updated": None,
    }


def system_list() -> list[dict]:
    """Every system: the clusters in id order, then the archive."""
    return [cluster_system(cluster) for cluster in _clusters()] + [archive_system()]


def system_get(system_id: str) -> dict | None:
    if system_id == ARCHIVE_SYSTEM:
        return archive_system()
    number = _cluster_number(system_id)
    if number is None:
        return None
    cluster = _clusters().filter(pk=number).first()
    return cluster_system(cluster) if cluster is not None else None
