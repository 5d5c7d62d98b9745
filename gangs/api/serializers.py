"""The OpenPAI routes' JSON shapes for the OpenAPI schema (``GET /api/schema``): a multi-task
job's summary (``gangs.summary.gang_summary``) and its resubmitted copy. They only describe; the
JSON itself comes from ``gangs.summary``."""

from __future__ import annotations

from rest_framework import serializers


class GangTaskSerializer(serializers.Serializer):
    name = serializers.CharField()
    uuid = serializers.UUIDField()
    index = serializers.IntegerField()
    state = serializers.CharField(help_text="the task's job state")
    slave = serializers.CharField(allow_null=True)
    ports = serializers.ListField(child=serializers.IntegerField(), help_text="host ports")
    exitCode = serializers.IntegerField(allow_null=True)


class GangRoleSerializer(serializers.Serializer):
    name = serializers.CharField()
    taskNumber = serializers.IntegerField()
    minFailedTaskCount = serializers.IntegerField(allow_null=True)
    minSucceededTaskCount = serializers.IntegerField(allow_null=True)
    tasks = GangTaskSerializer(many=True)


class GangLinkSerializer(serializers.Serializer):
    uuid = serializers.UUIDField()
    name = serializers.CharField()
    firstTask = serializers.UUIDField(allow_null=True, help_text="its page is this task's")


class GangSerializer(serializers.Serializer):
    """A multi-task OpenPAI job: roles x tasks of its current attempt, and its attempts."""

    uuid = serializers.UUIDField()
    name = serializers.CharField()
    status = serializers.CharField(help_text="ACTIVE, RUNNING, ONHOLD or how it ended")
    attempt = serializers.IntegerField()
    retryCount = serializers.IntegerField()
    endReason = serializers.CharField(allow_blank=True, allow_null=True)
    taskCounts = serializers.DictField(
        child=serializers.IntegerField(), help_text="tasks of the attempt per state"
    )
    roles = GangRoleSerializer(many=True)
    attempts = serializers.ListField(
        child=serializers.DictField(), help_text="ended attempts: status, reason, ended, tasks"
    )
    copyOf = GangLinkSerializer(allow_null=True, help_text="the job this one is a copy of")
    copies = GangLinkSerializer(many=True)


class GangCopySerializer(GangSerializer):
    """The copy a resubmit made, with the uuid of its first task."""

    firstTask = serializers.UUIDField()


class GangResubmitRequestSerializer(serializers.Serializer):
    jobName = serializers.CharField(required=False, help_text="default <jobName>-copy")
