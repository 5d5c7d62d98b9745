"""JSON of the job endpoints besides the Job object itself (which ``jobs.api.gpulab_json`` owns), and
serializers that only describe shapes for the OpenAPI schema."""

from __future__ import annotations

from rest_framework import serializers

from core.timefmt import utc_z


def debug_event(event, *, job_uuid: str) -> dict:
    """A JobEvent as GPULab's debug event ``{jobId, type, time, newState, msg}``."""
    return {
        "jobId": job_uuid,
        "type": str(event.type),
        "time": utc_z(event.time),
        "newState": event.new_state or None,
        "msg": event.message,
    }


def explanation(job) -> dict:
    """``GET /api/portal/jobs/<uuid>/explain``: why the job is (still) where it is."""
    return {
        "uuid": str(job.uuid),
        "status": str(job.status),
        "status_updated": utc_z(job.status_updated),
        "queued_explanations": [str(x) for x in job.queued_explanations or []],
        "end_reason": job.end_reason or None,
        # Started above a soft quota level (docs/quotas.md): the first halted for others.
        "borrowed": job.borrowed,
    }


# --- OpenAPI descriptions -----------------------------------------------------------------


class JobSerializer(serializers.Serializer):
    """GPULab's Job object (see docs/api.md and the GPULab reference for the nested keys)."""

    uuid = serializers.UUIDField()
    name = serializers.CharField()
    description = serializers.CharField(allow_null=True)
    deploymentEnvironment = serializers.CharField()
    request = serializers.DictField(help_text="resources, docker, scheduling, extra")
    owner = serializers.DictField(help_text="projectUrn, userUrn, userEmail")
    state = serializers.DictField(help_text="status, scheduling, eventTimes, resources")
    restartInfo = serializers.DictField(help_text="initialJobUuid, restartCount")


class JobListSerializer(serializers.Serializer):
    items = JobSerializer(many=True)
    page = serializers.IntegerField()
    page_size = serializers.IntegerField()
    total = serializers.IntegerField()
    pages = serializers.IntegerField()
    has_next = serializers.BooleanField()


class DebugEventSerializer(serializers.Serializer):
    jobId = serializers.UUIDField()
    type = serializers.ChoiceField(choices=["Status Change", "Debug", "Info", "Warning", "Error"])
    time = serializers.CharField()
    newState = serializers.CharField(allow_null=True)
    msg = serializers.CharField()


class StartAdviceSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=["gpus", "cluster", "gpu_model", "max_duration"])
    change = serializers.CharField(help_text='"1 GPU instead of 2"')
    start = serializers.CharField(help_text="estimated start with the change (UTC)")
    value = serializers.JSONField(help_text="the new value of the changed field")


class AccuracySerializer(serializers.Serializer):
    jobs = serializers.IntegerField(
        help_text="the latest started jobs that had an estimate (at most 100)"
    )
    median_error_s = serializers.IntegerField()
    p90_error_s = serializers.IntegerField()


class StartEstimateSerializer(serializers.Serializer):
    estimated_start = serializers.CharField(
        allow_null=True,
        help_text="UTC; jobs ahead run as long as their like ran (the median of the history "
        "of run times, at most their maxDuration); null when not within the simulated horizon",
    )
    earliest_start = serializers.CharField(
        allow_null=True, help_text="UTC; the start if the jobs ahead run short (5th percentile)"
    )
    latest_start = serializers.CharField(
        allow_null=True,
        help_text="UTC; the start if they run long (95th percentile); null: beyond the horizon",
    )
    made_at = serializers.CharField()
    note = serializers.CharField(
        allow_null=True,
        help_text="why there is no estimate; or the line of the quota that holds the job back",
    )
    advice = StartAdviceSerializer(many=True, help_text="only for viewers who see the job in full")
    accuracy = AccuracySerializer(allow_null=True)


class ExplanationSerializer(serializers.Serializer):
    uuid = serializers.UUIDField()
    status = serializers.CharField()
    status_updated = serializers.CharField()
    queued_explanations = serializers.ListField(child=serializers.CharField())
    end_reason = serializers.CharField(allow_null=True)
    start_estimate = StartEstimateSerializer(
        allow_null=True, help_text="QUEUED jobs only (docs/scheduling.md, Start estimates)"
    )


class ArraySubmittedSerializer(serializers.Serializer):
    uuids = serializers.ListField(child=serializers.CharField(), help_text="in the items' order")
    arrayId = serializers.CharField(
        help_text="shared by the array's jobs; the web jobs list shows them at /jobs/?sweep=<arrayId>"
    )


class ConvertedJobSerializer(serializers.Serializer):
    name = serializers.CharField()
    description = serializers.CharField(allow_null=True)
    request = serializers.DictField()


class OutputEntrySerializer(serializers.Serializer):
    path = serializers.CharField(help_text="relative to the output folder")
    size = serializers.IntegerField(help_text="bytes; 0 for a folder or a link")
    modified = serializers.CharField(help_text="UTC")
    type = serializers.ChoiceField(choices=["file", "dir", "link"])


class OutputListSerializer(serializers.Serializer):
    items = OutputEntrySerializer(many=True)


class JobShareSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    job = serializers.UUIDField()
    user = serializers.CharField(allow_null=True, help_text="the user it is shared with")
    project = serializers.CharField(allow_null=True, help_text="or the project")
    createdBy = serializers.CharField()
    created = serializers.CharField()


class JobShareListSerializer(serializers.Serializer):
    items = JobShareSerializer(many=True)


class JobShareRequestSerializer(serializers.Serializer):
    """Exactly one of the two."""

    user = serializers.CharField(required=False, help_text="a user name")
    project = serializers.CharField(required=False, help_text="a project name")


class GpuSeriesSerializer(serializers.Serializer):
    percent = serializers.ListField(child=serializers.FloatField(allow_null=True))
    memoryUsedMb = serializers.ListField(child=serializers.FloatField(allow_null=True))


class JobMetricsSerializer(serializers.Serializer):
    """One column per measure, one entry per sample (oldest first)."""

    time = serializers.ListField(child=serializers.CharField())
    cpuPercent = serializers.ListField(child=serializers.FloatField())
    memoryMb = serializers.ListField(child=serializers.IntegerField())
    netRxKbps = serializers.ListField(child=serializers.FloatField())
    netTxKbps = serializers.ListField(child=serializers.FloatField())
    gpus = serializers.DictField(child=GpuSeriesSerializer(), help_text="by GPU index")
    gpuIdleFlaggedAt = serializers.CharField(
        allow_null=True, help_text="when the idle-GPU review flagged the job"
    )


class ClusterUtilisationSerializer(serializers.Serializer):
    """One column per measure, one entry per bucket (oldest first)."""

    time = serializers.ListField(child=serializers.CharField(), help_text="bucket start, UTC")
    cpuCores = serializers.ListField(child=serializers.FloatField())
    memoryGb = serializers.ListField(child=serializers.FloatField())
    gpusHeld = serializers.ListField(child=serializers.FloatField())
    gpusBusy = serializers.ListField(child=serializers.FloatField())
