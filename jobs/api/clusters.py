"""GPULab v4.0 ``GET clusters`` and ``GET slaves``: clusters and slaves in GPULab's JSON shapes,
ClusterInfo and SlaveInfo2 (docs/gpulab-format.md, section 4).

The JSON (``cluster_infos``, ``slave_infos``) is shared by the REST API (also for anonymous
callers) and the Live pages and dashboard (jobs/web/, one floor up). The real client parses both objects strictly, so only GPULab's keys appear.

Resources are ``{systemTotal, acquired, used, available}`` with available = acquired - used:
systemTotal is what the machine has, acquired what the portal may use of it, used the sum over
the jobs that hold resources on the slave (``jobs.states.HOLDS_RESOURCES``). Workers: the portal
has no worker threads; a slave offers one "worker" per usable CPU (no job needs less than one
CPU) and each job holding resources uses one.

Anonymous callers see hosts and ids hidden: slave host and instance id become ``"hidden"``,
active job uuids are empty, and clusters tell nothing about access.

Queries: a fixed handful whatever the number of clusters, slaves, GPUs and jobs.

``ClusterListView`` and ``SlaveListView`` (``GET clusters``, ``GET slaves``, at the end of this
module) are open to anonymous callers (sanitised); their serializers only describe the shapes for
the OpenAPI schema.
"""

from __future__ import annotations

import re

from django.conf import settings
from django.db.models import Count, Sum
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.response import Response

from accounts.permissions import may_submit_to_any_project
from accounts.selectors import project_ids_of
from clusters.models import Cluster, Slave
from core.api.common import PortalAPIView
from core.timefmt import utc_z
from jobs.models import Job
from jobs.states import HOLDS_RESOURCES

HIDDEN = "hidden"
_CUDA_FULL_RE = re.compile(r"^([0-9]+)\.[0-9.]+$")


def _logged_in(viewer) -> bool:
    return bool(viewer is not None and getattr(viewer, "is_authenticated", False))


def gpu_vendor(model: str) -> str:
    lowered = model.lower()
    if lowered.startswith(("amd", "radeon", "instinct")):
        return "AMD"
    if lowered.startswith("intel"):
        return "Intel"
    return "NVIDIA"


def resource(system_total: int, acquired: int, used: int) -> dict:
    return {
        "systemTotal": int(system_total),
        "acquired": int(acquired),
        "used": int(used),
        "available": int(acquired) - int(used),
    }


def _add(a: dict, b: dict) -> dict:
    return resource(
        a["systemTotal"] + b["systemTotal"], a["acquired"] + b["acquired"], a["used"] + b["used"]
    )


ZERO = {"systemTotal": 0, "acquired": 0, "used": 0, "available": 0}


def _usage_by_slave() -> dict[int, dict]:
    """Per slave id: jobs, gpus, cpus and memory (MB, tmpfs included) held by its jobs. 1 query."""
    rows = (
        Job.objects.filter(status__in=HOLDS_RESOURCES, slave__isnull=False)
        .order_by()
        .values("slave_id")
        .annotate(
            jobs=Count("id"),
            gpus=Sum("gpus"),
            cpus=Sum("cpus"),
            memory_gb_held=Sum(Job.held_memory_gb_sql()),
        )
    )
    return {
        row["slave_id"]: {
            "jobs": row["jobs"] or 0,
            "gpus": row["gpus"] or 0,
            "cpus": row["cpus"] or 0,
            "memory_mb": (row["memory_gb_held"] or 0) * 1024,
        }
        for row in rows
    }


def _active_job_uuids_by_slave() -> dict[int, list[str]]:
    result: dict[int, list[str]] = {}
    rows = (
        Job.objects.filter(status__in=HOLDS_RESOURCES, slave__isnull=False)
        .order_by("created", "id")
        .values_list("slave_id", "uuid")
    )
    for slave_id, job_uuid in rows:
        result.setdefault(slave_id, []).append(str(job_uuid))
    return result


def _slaves():
    return (
        Slave.objects.select_related("cluster")
        .prefetch_related("gpus")
        .order_by("cluster_id", "name")
    )


def _gpu_models(gpus) -> list[dict]:
    seen: list[dict] = []
    for gpu in gpus:
        item = {"vendor": gpu_vendor(gpu.model), "name": gpu.model, "memoryMb": gpu.memory_mb}
        if item not in seen:
            seen.append(item)
    return seen


def _slave_resources(slave, usage: dict) -> dict:
    gpus = list(slave.gpus.all())
    used = usage.get(slave.pk, {"jobs": 0, "gpus": 0, "cpus": 0, "memory_mb": 0})
    workers = slave.usable_cpus
    return {
        "worker": resource(workers, workers, used["jobs"]),
        "cpuMemoryMb": resource(slave.memory_total_mb, slave.usable_memory_mb, used["memory_mb"]),
        "gpu": resource(len(gpus), sum(1 for g in gpus if g.acquired), used["gpus"]),
        "cpu": resource(slave.cpus_total, slave.usable_cpus, used["cpus"]),
    }


def _slave_info(slave, *, usage: dict, active: dict, logged_in: bool) -> dict:
    full_cuda = slave.cuda_version or None
    match = _CUDA_FULL_RE.match(full_cuda or "")
    res = _slave_resources(slave, usage)
    return {
        "name": slave.name,
        "instanceId": slave.instance_id if logged_in else HIDDEN,
        "clusterId": slave.cluster_id,
        # `gpulab-cli clusters ID --short` prints it; GPULab sets it on every slave.
        "deploymentEnvironment": slave.cluster.deployment_environment,
        "host": (slave.host or slave.name) if logged_in else HIDDEN,
        "comment": slave.comment,
        "aliases": [],
        "softwareVersion": f"gpu-portal {settings.PORTAL_VERSION}",
        "gpuModel": _gpu_models(slave.gpus.all()),
        "cpuModel": [slave.cpu_model] if slave.cpu_model else [],
        "worker": res["worker"],
        "cpuMemoryMb": res["cpuMemoryMb"],
        "gpu": res["gpu"],
        "cpu": res["cpu"],
        "lastUpdate": utc_z(slave.last_seen or slave.created),
        "shuttingDown": False,
        "cudaVersionFull": full_cuda if match else None,
        "cudaVersionMajor": int(match.group(1)) if match else None,
        "acceptingJobs": bool(slave.accepting_jobs and slave.online),
        "activeJobUuids": list(active.get(slave.pk, [])) if logged_in else [],
    }


def slave_infos(*, viewer) -> list[dict]:
    """Every registered slave as a SlaveInfo2 object (ordered by cluster, then name)."""
    logged_in = _logged_in(viewer)
    usage = _usage_by_slave()
    active = _active_job_uuids_by_slave() if logged_in else {}
    return [
        _slave_info(slave, usage=usage, active=active, logged_in=logged_in) for slave in _slaves()
    ]


def cluster_infos(*, viewer) -> list[dict]:
    """Every cluster as a ClusterInfo object. Resources and GPU models sum up its online slaves."""

    logged_in = _logged_in(viewer)
    admin = None  # asked only for a private cluster (a permission lookup costs queries)
    mine = project_ids_of(viewer) if logged_in else set()
    usage = _usage_by_slave()
    slaves_by_cluster: dict[int, list] = {}
    for slave in _slaves():
        if slave.online:
            slaves_by_cluster.setdefault(slave.cluster_id, []).append(slave)

    result = []
    for cluster in Cluster.objects.prefetch_related("owner_projects").order_by("id"):
        slaves = slaves_by_cluster.get(cluster.pk, [])
        totals = {key: dict(ZERO) for key in ("worker", "cpuMemoryMb", "gpu", "cpu")}
        gpus = []
        for slave in slaves:
            res = _slave_resources(slave, usage)
            for key in totals:
                totals[key] = _add(totals[key], res[key])
            gpus.extend(slave.gpus.all())
        owners = list(cluster.owner_projects.all())
        if not logged_in:
            have_access, allowed = None, None
        elif cluster.is_private:
            if admin is None:
                admin = may_submit_to_any_project(viewer)
            have_access = admin or any(p.pk in mine for p in owners)
            allowed = [p.urn for p in owners]
        else:
            have_access, allowed = True, None
        result.append(
            {
                "clusterId": cluster.pk,
                "deploymentEnvironment": cluster.deployment_environment,
                "comment": cluster.comment,
                "isPrivate": cluster.is_private,
                "slaveCount": len(slaves),
                "gpuModel": _gpu_models(gpus),
                "worker": totals["worker"],
                "cpuMemoryMb": totals["cpuMemoryMb"],
                "gpu": totals["gpu"],
                "cpu": totals["cpu"],
                "haveAccess": have_access,
                "allowedProjects": allowed,
            }
        )
    return result


# --- the views --------------------------------------------------------------------------------

TAG = "GPULab v4.0"


class ResourceInfoSerializer(serializers.Serializer):
    systemTotal = serializers.IntegerField()
    acquired = serializers.IntegerField()
    used = serializers.IntegerField()
    available = serializers.IntegerField(help_text="acquired - used")


class GpuModelSerializer(serializers.Serializer):
    vendor = serializers.CharField()
    name = serializers.CharField()
    memoryMb = serializers.IntegerField()


class ClusterInfoSerializer(serializers.Serializer):
    clusterId = serializers.IntegerField()
    deploymentEnvironment = serializers.CharField()
    comment = serializers.CharField()
    isPrivate = serializers.BooleanField()
    slaveCount = serializers.IntegerField()
    gpuModel = GpuModelSerializer(many=True)
    worker = ResourceInfoSerializer()
    cpuMemoryMb = ResourceInfoSerializer()
    gpu = ResourceInfoSerializer()
    cpu = ResourceInfoSerializer()
    haveAccess = serializers.BooleanField(allow_null=True)
    allowedProjects = serializers.ListField(child=serializers.CharField(), allow_null=True)


class SlaveInfo2Serializer(serializers.Serializer):
    name = serializers.CharField()
    instanceId = serializers.CharField()
    clusterId = serializers.IntegerField()
    host = serializers.CharField()
    comment = serializers.CharField()
    aliases = serializers.ListField(child=serializers.CharField())
    softwareVersion = serializers.CharField()
    gpuModel = GpuModelSerializer(many=True)
    cpuModel = serializers.ListField(child=serializers.CharField())
    worker = ResourceInfoSerializer()
    cpuMemoryMb = ResourceInfoSerializer()
    gpu = ResourceInfoSerializer()
    cpu = ResourceInfoSerializer()
    lastUpdate = serializers.CharField()
    shuttingDown = serializers.BooleanField()
    cudaVersionFull = serializers.CharField(allow_null=True)
    cudaVersionMajor = serializers.IntegerField(allow_null=True)
    acceptingJobs = serializers.BooleanField()
    activeJobUuids = serializers.ListField(child=serializers.UUIDField())


class ClusterListView(PortalAPIView):
    permission_classes = [AllowAny]

    @extend_schema(
        operation_id="gpulab_clusters",
        tags=[TAG],
        summary="Clusters (anonymous callers: sanitised)",
        description="Every cluster with its slaves' resources and what the jobs use of "
        "them; whether you may use a private one (haveAccess) is told to logged-in callers.",
        responses={200: ClusterInfoSerializer(many=True)},
    )
    def get(self, request):
        return Response(cluster_infos(viewer=request.user))


class SlaveListView(PortalAPIView):
    permission_classes = [AllowAny]

    @extend_schema(
        operation_id="gpulab_slaves",
        tags=[TAG],
        summary="Slaves (anonymous callers: hosts and ids hidden)",
        description="Every slave with its GPUs, CPUs and memory, what the jobs use of them "
        "and the jobs running there (GPULab's SlaveInfo2).",
        responses={200: SlaveInfo2Serializer(many=True)},
    )
    def get(self, request):
        return Response(slave_infos(viewer=request.user))
