"""The shapes of OpenPAI's REST answers, as its API spec (src/rest-server/docs/swagger.yaml of
microsoft/pai, version 2.2.7) writes them, for the OpenAPI schema (``GET /api/schema``).
Only what the portal answers is declared; tests/gangs/api/test_openpai_rest.py checks the
answers against the spec's own schemas too."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from gangs.openpai_jobs import PAI_STATES

EXECUTION_TYPES = ("START", "STOP")
SUB_STATES = ("AttemptCreationPending", "AttemptRunning", "AttemptDeletionPending", "Completed")
# The codes of OpenPAI's API spec (its Response schema) that the portal answers with
# (gangs/middleware.py).
ERROR_CODES = (
    "InvalidParametersError",
    "UnauthorizedUserError",
    "ForbiddenUserError",
    "NoApiError",
    "NoJobError",
    "ConflictJobError",
    "UnknownError",
)


class OpenPaiErrorSerializer(serializers.Serializer[dict[str, Any]]):
    """OpenPAI's error answer: ``{"code": "NoJobError", "message": "Job u~x is not found."}``."""

    code = serializers.ChoiceField(choices=ERROR_CODES, help_text="OpenPAI's error code")
    message = serializers.CharField(help_text="what went wrong")
    # A field named like Serializer.errors: DRF's metaclass moves it into the declared fields.
    errors = serializers.ListField(  # type: ignore[assignment]
        child=serializers.CharField(),
        required=False,
        help_text='the portal\'s addition: one "path: rule" per problem (rejected input only)',
    )


class OpenPaiMessageSerializer(serializers.Serializer[dict[str, Any]]):
    """OpenPAI's ``Response``: ``{"message": "update job pai successfully"}``."""

    message = serializers.CharField()


class OpenPaiSubmittedSerializer(OpenPaiMessageSerializer):
    name = serializers.CharField(help_text="the job as OpenPAI names it: {user}~{jobName}")
    uuid = serializers.UUIDField(help_text="the portal's uuid of its (first) task")


class RetryDetailsSerializer(serializers.Serializer[dict[str, Any]]):
    user = serializers.IntegerField()
    platform = serializers.IntegerField()
    resource = serializers.IntegerField()


class JobSummarySerializer(serializers.Serializer[dict[str, Any]]):
    name = serializers.CharField()
    username = serializers.CharField()
    state = serializers.ChoiceField(choices=PAI_STATES)
    subState = serializers.ChoiceField(choices=SUB_STATES)
    executionType = serializers.ChoiceField(choices=EXECUTION_TYPES)
    tags = serializers.ListField(child=serializers.CharField())
    retries = serializers.IntegerField()
    retryDetails = RetryDetailsSerializer()
    retryDelayTime = serializers.IntegerField(allow_null=True)
    submissionTime = serializers.IntegerField()
    createdTime = serializers.IntegerField(allow_null=True)
    launchedTime = serializers.IntegerField(allow_null=True)
    completedTime = serializers.IntegerField(allow_null=True)
    appExitCode = serializers.IntegerField(allow_null=True)
    virtualCluster = serializers.CharField()
    totalGpuNumber = serializers.IntegerField()
    totalTaskNumber = serializers.IntegerField()
    totalTaskRoleNumber = serializers.IntegerField()
    debugId = serializers.CharField()
    jobPriority = serializers.CharField(allow_null=True)


class JobSummaryPageSerializer(serializers.Serializer[dict[str, Any]]):
    """``withTotalCount=true``: the page and the number of jobs in all."""

    totalCount = serializers.IntegerField()
    # A field named like Serializer.data: DRF's metaclass moves it into the declared fields.
    data = JobSummarySerializer(many=True)  # type: ignore[assignment]


class JobStatusSerializer(serializers.Serializer[dict[str, Any]]):
    username = serializers.CharField()
    state = serializers.ChoiceField(choices=PAI_STATES)
    subState = serializers.ChoiceField(choices=SUB_STATES)
    executionType = serializers.ChoiceField(choices=EXECUTION_TYPES)
    retries = serializers.IntegerField()
    retryDetails = RetryDetailsSerializer()
    retryDelayTime = serializers.IntegerField(allow_null=True)
    submissionTime = serializers.IntegerField()
    createdTime = serializers.IntegerField(allow_null=True)
    launchedTime = serializers.IntegerField(allow_null=True)
    completedTime = serializers.IntegerField(allow_null=True)
    attemptId = serializers.IntegerField()
    attemptState = serializers.ChoiceField(choices=PAI_STATES)
    appId = serializers.CharField(allow_null=True)
    appCreatedTime = serializers.IntegerField(allow_null=True)
    appLaunchedTime = serializers.IntegerField(allow_null=True)
    appCompletedTime = serializers.IntegerField(allow_null=True)
    appExitCode = serializers.IntegerField(allow_null=True)
    appExitDiagnostics = serializers.CharField(allow_null=True)
    appExitTriggerMessage = serializers.CharField(allow_null=True)
    virtualCluster = serializers.CharField()


class TaskStatusSerializer(serializers.Serializer[dict[str, Any]]):
    taskIndex = serializers.IntegerField()
    taskUid = serializers.CharField()
    taskState = serializers.ChoiceField(choices=PAI_STATES)
    containerId = serializers.CharField(allow_null=True)
    containerIp = serializers.CharField(allow_null=True)
    containerNodeName = serializers.CharField(allow_null=True)
    containerPorts = serializers.DictField(child=serializers.CharField(allow_blank=True))
    containerGpus = serializers.CharField(allow_null=True)
    containerLog = serializers.CharField()
    containerExitCode = serializers.IntegerField(allow_null=True)
    containerExitDiagnostics = serializers.CharField(allow_null=True)
    retries = serializers.IntegerField()
    accountableRetries = serializers.IntegerField()
    createdTime = serializers.IntegerField(allow_null=True)
    launchedTime = serializers.IntegerField(allow_null=True)
    completedTime = serializers.IntegerField(allow_null=True)
    attemptId = serializers.IntegerField()
    attemptState = serializers.ChoiceField(choices=PAI_STATES)


class TaskRoleSerializer(serializers.Serializer[dict[str, Any]]):
    taskRoleStatus = serializers.DictField(child=serializers.CharField())
    taskStatuses = TaskStatusSerializer(many=True)


class EndedTaskSerializer(serializers.Serializer[dict[str, Any]]):
    taskRoleName = serializers.CharField(allow_null=True)
    taskIndex = serializers.IntegerField(allow_null=True)
    taskUid = serializers.CharField(allow_null=True)
    taskState = serializers.ChoiceField(choices=PAI_STATES)
    containerExitCode = serializers.IntegerField(allow_null=True)


class EndedAttemptSerializer(serializers.Serializer[dict[str, Any]]):
    attemptId = serializers.IntegerField()
    attemptState = serializers.ChoiceField(choices=PAI_STATES)
    reason = serializers.CharField(allow_blank=True)
    completedTime = serializers.CharField(allow_null=True, help_text="UTC, ISO 8601")
    tasks = EndedTaskSerializer(many=True)


class JobDetailSerializer(serializers.Serializer[dict[str, Any]]):
    name = serializers.CharField()
    tags = serializers.ListField(child=serializers.CharField())
    jobStatus = JobStatusSerializer()
    taskRoles = serializers.DictField(child=TaskRoleSerializer())
    attempts = EndedAttemptSerializer(
        many=True, help_text="the portal's addition: the attempts that ended, oldest first"
    )
    debugId = serializers.CharField()


class ExecutionTypeSerializer(serializers.Serializer[dict[str, Any]]):
    value = serializers.ChoiceField(choices=EXECUTION_TYPES)
