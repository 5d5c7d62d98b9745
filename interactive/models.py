"""Session templates and interactive sessions (docs/sessions.md).

A session is one GPULab interactive job (jobs.Job) plus the row here that the session proxy
reads: where the container answers (``upstream``), the prefix rule, the app's secret token, and
the lifecycle's marks (activity, warnings sent, extensions)."""

from __future__ import annotations

import secrets

from django.db import models


class SessionTemplate(models.Model):
    """What "New session" offers: an image, its command and web port, default resources."""

    class Kind(models.TextChoices):
        JUPYTERLAB = "jupyterlab", "JupyterLab"
        CODE_SERVER = "code-server", "VS Code (code-server)"
        TENSORBOARD = "tensorboard", "TensorBoard"
        CUSTOM = "custom", "Custom"

    slug = models.SlugField(max_length=50, unique=True)
    title = models.CharField(max_length=100)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    image = models.CharField(max_length=500)
    # Placeholders: {base_url} ("/s/<key>/"), {base_url_no_trailing_slash}, {port}, {logdir}.
    command = models.TextField()
    port = models.PositiveIntegerField()
    # code-server wants the prefix stripped; JupyterLab and TensorBoard are told their base URL.
    strip_prefix = models.BooleanField(default=False)
    landing_path = models.CharField(max_length=200, blank=True)
    gpus = models.PositiveIntegerField(default=1)
    cpus = models.PositiveIntegerField(default=2)
    memory_gb = models.PositiveIntegerField(default=8)
    time_box = models.DurationField(help_text="How long a session runs before any extension.")
    enabled = models.BooleanField(default=True)

    class Meta:
        ordering = ["title", "id"]

    def __str__(self) -> str:
        return self.title


def session_key_new() -> str:
    """22 url-safe random characters (132 bits): the session's name in its URL."""
    return secrets.token_urlsafe(16)[:22]


def app_token_new() -> str:
    return secrets.token_urlsafe(32)


class InteractiveSession(models.Model):
    """One session: its job and what the proxy and the lifecycle need to know of it."""

    key = models.CharField(max_length=22, unique=True, default=session_key_new, editable=False)
    # A session's job has one row; any other job one per web port it declares and someone
    # opened through the portal (interactive/web_ports.py: template None, strip_prefix).
    job = models.ForeignKey(
        "jobs.Job", on_delete=models.CASCADE, related_name="interactive_sessions"
    )
    template = models.ForeignKey(
        SessionTemplate, null=True, blank=True, on_delete=models.PROTECT, related_name="sessions"
    )
    open_to_project = models.BooleanField(default=False)
    # Sent upstream by the proxy only; never in a page, an API answer, an event or a log.
    app_token = models.CharField(max_length=100, default=app_token_new, editable=False)
    port = models.PositiveIntegerField()
    strip_prefix = models.BooleanField(default=False)
    landing_path = models.CharField(max_length=200, blank=True)
    upstream = models.CharField(max_length=100, blank=True)  # "ip:port" while running
    last_activity_at = models.DateTimeField(null=True, blank=True)
    idle_warned_at = models.DateTimeField(null=True, blank=True)
    end_warned_at = models.DateTimeField(null=True, blank=True)
    extensions = models.PositiveIntegerField(default=0)
    logdir = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["job", "port"], name="interactive_session_job_port")
        ]

    def __str__(self) -> str:
        return f"session {self.key}"

    def __repr__(self) -> str:  # the token stays out of tracebacks and logs
        return f"<InteractiveSession {self.key} job={self.job_id}>"

    @property
    def is_web_port(self) -> bool:
        """A job's declared web port opened through the portal, not a session the portal
        started: no time box, no idle cull, no Extend or Stop (docs/sessions.md)."""
        return self.template_id is None

    @property
    def prefix(self) -> str:
        return f"/s/{self.key}/"
