"""GPULab v4.0 ``GET clusters`` and ``GET slaves``: open to anonymous callers (sanitised).

The serializers below only describe the shapes for the OpenAPI schema; the JSON itself comes
from ``jobs.api.cluster_json``.
"""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.response import Response

from core.api.common import PortalAPIView
from jobs.api.cluster_json import cluster_infos, slave_infos

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
