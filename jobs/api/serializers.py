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
    }


# --- OpenAPI descriptions -----------------------------------------------------------------


class ErrorSerializer(serializers.Serializer):
    error = serializers.CharField()
    # A field named like Serializer.errors: DRF's metaclass moves it into the declared fields.
    errors = serializers.ListField(  # type: ignore[assignment]
        child=serializers.CharField(), required=False, help_text='"path: rule" per problem'
    )


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
    note = serializers.CharField(allow_null=True, help_text="why there is no estimate")
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


class ConvertedJobSerializer(serializers.Serializer):
    name = serializers.CharField()
    description = serializers.CharField(allow_null=True)
    request = serializers.DictField()
