"""Staff edit the templates; sessions are listed read-only with a "stop" action (the GPULab halt
of their job, interactive.services.session_stop)."""

from __future__ import annotations

from django.contrib import admin, messages

from core.errors import ServiceError
from interactive.models import InteractiveSession, SessionTemplate
from interactive.services import session_stop


@admin.register(SessionTemplate)
class SessionTemplateAdmin(admin.ModelAdmin):
    list_display = ("slug", "title", "kind", "image", "port", "gpus", "time_box", "enabled")
    list_filter = ("kind", "enabled")
    search_fields = ("slug", "title", "image")


@admin.register(InteractiveSession)
class InteractiveSessionAdmin(admin.ModelAdmin):
    list_display = ("key", "job", "template", "upstream", "last_activity_at", "extensions")
    list_select_related = ("job", "template")
    search_fields = ("key", "job__uuid")
    # Never the app token: it reaches the proxy only.
    fields = (
        "key",
        "job",
        "template",
        "open_to_project",
        "port",
        "strip_prefix",
        "landing_path",
        "upstream",
        "logdir",
        "last_activity_at",
        "idle_warned_at",
        "end_warned_at",
        "extensions",
        "created_at",
    )
    readonly_fields = fields
    actions = ("stop_sessions",)

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    @admin.action(description="Stop the selected sessions (GPULab halt of their job)")
    def stop_sessions(self, request, queryset) -> None:
        for session in queryset.select_related("job"):
            try:
                session_stop(session=session, user=request.user)
            except ServiceError as exc:
                self.message_user(request, f"{session.key}: {exc}", messages.WARNING)
            else:
                self.message_user(request, f"{session.key}: stop requested")
