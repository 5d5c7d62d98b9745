"""The shapes of the sessions API's answers and its one request body (docs/sessions.md "REST")."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers


class SessionTemplateSerializer(serializers.Serializer[dict[str, Any]]):
    slug = serializers.CharField()
    title = serializers.CharField()
    kind = serializers.ChoiceField(choices=["jupyterlab", "code-server", "tensorboard", "custom"])
    image = serializers.CharField()
    port = serializers.IntegerField()
    landing_path = serializers.CharField(allow_blank=True)
    gpus = serializers.IntegerField(help_text="default GPUs")
    cpus = serializers.IntegerField()
    memory_gb = serializers.IntegerField()
    hours = serializers.FloatField(help_text="the default time box")


class SessionSerializer(serializers.Serializer[dict[str, Any]]):
    key = serializers.CharField(help_text="the session's name in its URL (22 characters)")
    job_id = serializers.UUIDField(help_text="the session's interactive job")
    template = serializers.CharField(
        allow_null=True, help_text="null for a job's web port opened through the portal"
    )
    web_port = serializers.BooleanField(
        help_text="a job's declared web port (no time box, no idle cull), not a session"
    )
    status = serializers.CharField(help_text="the job's status")
    running = serializers.BooleanField(help_text="the app can be reached now")
    url = serializers.URLField(help_text="the app on the session proxy's origin")
    open_url = serializers.URLField(
        help_text="the portal's sign-in hand-off to the proxy, for browsers"
    )
    open_to_project = serializers.BooleanField()
    logdir = serializers.CharField(allow_null=True)
    owner = serializers.CharField()
    project = serializers.CharField()
    created_at = serializers.DateTimeField()
    ends_at = serializers.DateTimeField(
        allow_null=True, help_text="the time box's end (null until it runs)"
    )
    idle_cull_at = serializers.DateTimeField(
        allow_null=True, help_text="when it is culled unless used (null unless running)"
    )
    extensions = serializers.IntegerField()
    extensions_left = serializers.IntegerField()


class SessionListSerializer(serializers.Serializer[dict[str, Any]]):
    sessions = SessionSerializer(many=True)


class SessionTemplateListSerializer(serializers.Serializer[dict[str, Any]]):
    templates = SessionTemplateSerializer(many=True)


class SessionStartSerializer(serializers.Serializer[dict[str, Any]]):
    """Only for the schema: the view reads the body itself and names each wrong field."""

    template = serializers.CharField(help_text="a template's slug")
    project = serializers.CharField(help_text="a project's name (default: your only project)")
    gpus = serializers.IntegerField(required=False, help_text="default: the template's")
    hours = serializers.FloatField(required=False, help_text="default: the template's time box")
    open_to_project = serializers.BooleanField(required=False, default=False)
    logdir = serializers.CharField(
        required=False, help_text="TensorBoard: the folder it reads (in /project)"
    )
