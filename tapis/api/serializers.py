"""The Tapis API's JSON shapes for the OpenAPI schema (``GET /api/schema``): Tapis' envelope
``{status, message, version, result}`` around ``Job``, ``JobListDTO``, ``JobStatusDisplay``,
``JobHistoryDisplayDTO``, ``FileInfo``, the share DTOs and the portal's app definition.

They only describe; the JSON itself comes from ``tapis.shapes``, ``tapis.definitions`` and the
views. Field names and types follow Tapis' published schemas (tests/tapis/openapi_facts.py
checks the answers against those), nullable where the portal sends null.
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

TAPIS_STATUSES = [
    "PENDING",
    "PROCESSING_INPUTS",
    "STAGING_INPUTS",
    "STAGING_JOB",
    "SUBMITTING_JOB",
    "QUEUED",
    "RUNNING",
    "ARCHIVING",
    "BLOCKED",
    "PAUSED",
    "FINISHED",
    "CANCELLED",
    "FAILED",
]


def _text(**kwargs) -> serializers.CharField:
    return serializers.CharField(allow_blank=True, **kwargs)


def _nullable_text(**kwargs) -> serializers.CharField:
    return serializers.CharField(allow_blank=True, allow_null=True, **kwargs)


def _constant(value: str, **kwargs) -> serializers.CharField:
    """A field that always holds ``value`` (a const: no enum component of its own)."""
    field = type(f"Constant{value.title()}Field", (serializers.CharField,), {})
    return extend_schema_field({"type": "string", "const": value})(field)(**kwargs)


def _null(**kwargs) -> serializers.Field:
    """A field that is always null."""
    field = type("NullField", (serializers.JSONField,), {})
    return extend_schema_field({"type": "null"})(field)(**kwargs)


def envelope_of(name: str, result: serializers.Field, *, metadata: bool = False) -> type:
    """Tapis' envelope around ``result``, as a serializer named ``Tapis<name>`` (the schema's
    component name)."""
    fields: dict[str, serializers.Field] = {
        "status": _constant("success"),
        "message": _text(),
        "version": _text(help_text="the portal's version"),
        "result": result,
    }
    if metadata:
        fields["metadata"] = TapisListMetadataSerializer()
    return type(f"Tapis{name}Serializer", (serializers.Serializer,), fields)


class TapisErrorResultSerializer(serializers.Serializer):
    # A field named like Serializer.errors: DRF's metaclass moves it into the declared fields.
    errors = serializers.ListField(  # type: ignore[assignment]
        child=serializers.CharField(), help_text='one "path: rule" per problem'
    )


class TapisErrorSerializer(serializers.Serializer):
    """Every refused Tapis request: the portal's error in Tapis' envelope."""

    status = _constant("error")
    message = serializers.CharField(help_text="what went wrong, then each problem")
    version = _text()
    result = TapisErrorResultSerializer(allow_null=True, help_text="null unless input was refused")


class TapisListMetadataSerializer(serializers.Serializer):
    recordCount = serializers.IntegerField()
    recordLimit = serializers.IntegerField()
    recordsSkipped = serializers.IntegerField()
    totalCount = serializers.IntegerField(required=False, help_text="with computeTotal=true")


class TapisMessageSerializer(serializers.Serializer):
    message = serializers.CharField()


class TapisJobSerializer(serializers.Serializer):
    """Tapis' ``Job`` (the fields a portal job has a value for)."""

    id = serializers.IntegerField()
    uuid = serializers.UUIDField()
    name = _text()
    owner = serializers.CharField()
    createdby = serializers.CharField()
    tenant = serializers.CharField()
    createdbyTenant = serializers.CharField()
    description = _text()
    status = serializers.ChoiceField(choices=TAPIS_STATUSES)
    condition = _nullable_text()
    lastMessage = _text()
    created = serializers.CharField()
    ended = _nullable_text()
    lastUpdated = _nullable_text()
    appId = _text()
    appVersion = _text()
    execSystemId = _text()
    execSystemExecDir = serializers.CharField()
    execSystemInputDir = serializers.CharField()
    execSystemOutputDir = serializers.CharField()
    archiveSystemId = serializers.CharField()
    archiveSystemDir = serializers.CharField()
    nodeCount = serializers.IntegerField()
    coresPerNode = serializers.IntegerField()
    memoryMB = serializers.IntegerField()
    maxMinutes = serializers.IntegerField()
    fileInputs = serializers.CharField(help_text="JSON text, as Tapis sends it")
    parameterSet = serializers.CharField(help_text="JSON text, as Tapis sends it")
    subscriptions = serializers.CharField(help_text="JSON text, as Tapis sends it")
    execSystemConstraints = _nullable_text()
    blockedCount = serializers.IntegerField()
    remoteJobId = _nullable_text()
    remoteOutcome = serializers.ChoiceField(choices=["FINISHED", "FAILED"], allow_null=True)
    remoteResultInfo = _nullable_text()
    remoteQueue = _nullable_text()
    remoteStarted = _nullable_text()
    remoteEnded = _nullable_text()
    visible = serializers.BooleanField()
    tags = serializers.ListField(child=serializers.CharField())
    jobType = serializers.CharField()
    notes = serializers.CharField(help_text="JSON text, as Tapis sends it")
    mpi = serializers.BooleanField()


class TapisJobListItemSerializer(serializers.Serializer):
    """Tapis' ``JobListDTO``."""

    uuid = serializers.UUIDField()
    name = _text()
    owner = serializers.CharField()
    appId = _text()
    appVersion = _text()
    created = serializers.CharField()
    status = serializers.ChoiceField(choices=TAPIS_STATUSES)
    condition = _nullable_text()
    remoteStarted = _nullable_text()
    ended = _nullable_text()
    tenant = serializers.CharField()
    execSystemId = _text()
    archiveSystemId = serializers.CharField()
    lastUpdated = _nullable_text()


class TapisJobStatusSerializer(serializers.Serializer):
    """Tapis' ``JobStatusDisplay``."""

    status = serializers.ChoiceField(choices=TAPIS_STATUSES)
    condition = _nullable_text()


class TapisHistoryItemSerializer(serializers.Serializer):
    """Tapis' ``JobHistoryDisplayDTO``."""

    event = serializers.ChoiceField(
        choices=["JOB_NEW_STATUS", "JOB_ERROR_MESSAGE", "JOB_USER_EVENT"]
    )
    created = serializers.CharField()
    eventDetail = serializers.CharField()
    description = _text()
    transferTaskUuid = _nullable_text()


class TapisFileInfoSerializer(serializers.Serializer):
    """Tapis' ``FileInfo`` of an archived output."""

    mimeType = _nullable_text()
    type = serializers.ChoiceField(choices=["file", "dir", "symbolic_link", "other"])
    owner = _nullable_text()
    group = _nullable_text()
    nativePermissions = _nullable_text()
    url = serializers.CharField()
    lastModified = _nullable_text()
    name = serializers.CharField()
    path = serializers.CharField()
    size = serializers.IntegerField(allow_null=True)


class TapisJobShareSerializer(serializers.Serializer):
    """Tapis' ``JobShareListDTO``: a grantee is a user name or ``project:<name>``."""

    tenant = serializers.CharField()
    createdby = serializers.CharField()
    jobUuid = serializers.UUIDField()
    grantee = serializers.CharField()
    jobResource = serializers.CharField()
    jobPermission = _constant("READ")
    created = serializers.CharField()


class TapisShareRequestSerializer(serializers.Serializer):
    """Tapis' ``ReqShareJob``; the portal shares read-only and whole."""

    grantee = serializers.CharField(help_text="a user name, or project:<name>")
    jobResource = serializers.ListField(
        child=serializers.ChoiceField(
            choices=["JOB_HISTORY", "JOB_RESUBMIT_REQUEST", "JOB_OUTPUT", "JOB_INPUT"]
        ),
        required=False,
    )
    jobPermission = _constant("READ", required=False)


class TapisAppShareRequestSerializer(serializers.Serializer):
    grantee = serializers.CharField(help_text="a user name, or project:<name>")
    appPermission = _constant("READ", required=False)


class TapisAppShareSerializer(serializers.Serializer):
    grantee = serializers.CharField()
    appId = serializers.CharField()
    appVersion = serializers.CharField()
    appPermission = _constant("READ")
    createdby = serializers.CharField()
    created = serializers.CharField()


class TapisParameterSetSerializer(serializers.Serializer):
    appArgs = serializers.ListField(child=serializers.DictField())
    envVariables = serializers.ListField(child=serializers.DictField())


class TapisJobAttributesSerializer(serializers.Serializer):
    execSystemId = serializers.CharField(allow_null=True, help_text="the default cluster id")
    parameterSet = TapisParameterSetSerializer()
    fileInputs = serializers.ListField(child=serializers.DictField())
    resources = serializers.DictField(help_text="GPULab's request.resources (defaults)")
    scheduling = serializers.DictField(help_text="GPULab's request.scheduling durations")


class TapisAppSerializer(serializers.Serializer):
    """An app as its definition (docs/tapis.md): what createAppVersion takes back."""

    id = serializers.CharField()
    version = serializers.CharField()
    description = _text()
    owner = serializers.CharField()
    visibility = serializers.ChoiceField(choices=["private", "project", "everyone"])
    project = serializers.CharField(allow_null=True)
    containerImage = serializers.CharField()
    command = _text()
    locked = serializers.BooleanField()
    created = serializers.CharField()
    updated = serializers.CharField()
    jobAttributes = TapisJobAttributesSerializer()


TapisJobEnvelope = envelope_of("JobEnvelope", TapisJobSerializer())
TapisJobListEnvelope = envelope_of(
    "JobListEnvelope", TapisJobListItemSerializer(many=True), metadata=True
)
TapisJobStatusEnvelope = envelope_of("JobStatusEnvelope", TapisJobStatusSerializer())
TapisHistoryEnvelope = envelope_of("JobHistoryEnvelope", TapisHistoryItemSerializer(many=True))
TapisMessageEnvelope = envelope_of("MessageEnvelope", TapisMessageSerializer())
TapisResubmitRequestEnvelope = envelope_of(
    "ResubmitRequestEnvelope",
    serializers.DictField(help_text="the submitJob request the job was made from"),
)
TapisFileListEnvelope = envelope_of("FileListEnvelope", TapisFileInfoSerializer(many=True))
TapisJobShareListEnvelope = envelope_of("JobShareListEnvelope", TapisJobShareSerializer(many=True))
TapisAppEnvelope = envelope_of("AppEnvelope", TapisAppSerializer())
TapisAppListEnvelope = envelope_of("AppListEnvelope", TapisAppSerializer(many=True))
TapisAppShareEnvelope = envelope_of("AppShareEnvelope", TapisAppShareSerializer())
TapisAppShareListEnvelope = envelope_of("AppShareListEnvelope", TapisAppShareSerializer(many=True))
TapisEmptyEnvelope = envelope_of("EmptyEnvelope", _null(help_text="always null"))
