"""Admins manage every app here; a definition is checked by the same rules as the API's."""

import json

from django import forms
from django.contrib import admin

from jobs.spec import SpecError
from tapis.definitions import app_definition_parse, app_to_json
from tapis.models import App, AppShare, HiddenJob, JobUserEvent, TapisToken
from tapis.services import app_delete
from tapis.shares import app_share_revoke


class AppAdminForm(forms.ModelForm):
    """The model's fields, judged by ``app_definition_parse`` (one error list, field paths)."""

    class Meta:
        model = App
        fields = [
            "app_id",
            "version",
            "description",
            "owner",
            "visibility",
            "project",
            "image",
            "command",
            "arguments",
            "env",
            "file_inputs",
            "resources",
            "scheduling",
            "exec_system_id",
            "locked",
        ]

    def clean(self):
        cleaned = super().clean()
        assert cleaned is not None  # a ModelForm's clean() returns cleaned_data
        owner = cleaned.get("owner")
        project = cleaned.get("project")
        probe = App(**{k: v for k, v in cleaned.items() if k in {f.name for f in App._meta.fields}})
        if owner is not None:
            probe.owner = owner
        definition = app_to_json_unsaved(probe, project)
        try:
            app_definition_parse(definition)
        except SpecError as exc:
            raise forms.ValidationError([str(e) for e in exc.errors]) from None
        if self.instance.pk and self.instance.locked and self.has_changed():
            changed = set(self.changed_data) - {"locked", "description"}
            if changed:
                raise forms.ValidationError(
                    f"a job used this version: {', '.join(sorted(changed))} cannot change"
                )
        return cleaned


def app_to_json_unsaved(app: App, project) -> dict:
    data = app_to_json_fields(app)
    data["project"] = project.name if project is not None else None
    return data


def app_to_json_fields(app: App) -> dict:
    """``app_to_json`` without what only a saved row has (owner, times)."""
    return {
        "id": app.app_id,
        "version": app.version,
        "description": app.description,
        "visibility": app.visibility,
        "containerImage": app.image,
        "command": app.command,
        "jobAttributes": {
            "execSystemId": app.exec_system_id or None,
            "parameterSet": {"appArgs": app.arguments, "envVariables": app.env},
            "fileInputs": app.file_inputs,
            "resources": app.resources,
            "scheduling": app.scheduling,
        },
    }


@admin.register(App)
class AppAdmin(admin.ModelAdmin):
    form = AppAdminForm
    list_display = [
        "app_id",
        "version",
        "owner",
        "visibility",
        "project",
        "image",
        "locked",
        "deleted_at",
    ]
    list_filter = ["visibility", "locked", "project"]
    search_fields = ["app_id", "description", "owner__username", "image"]
    readonly_fields = ["created", "updated", "deleted_at", "definition"]

    @admin.display(description="definition (API shape)")
    def definition(self, obj):
        return json.dumps(app_to_json(obj), indent=2) if obj.pk else ""

    # Deleting goes through the service: a version a job used is hidden, never removed.
    def delete_model(self, request, obj):
        app_delete(app=obj, user=request.user)

    def delete_queryset(self, request, queryset):
        for app in queryset:
            app_delete(app=app, user=request.user)


@admin.register(AppShare)
class AppShareAdmin(admin.ModelAdmin):
    """Shares are made by apps' owners (app page, API); admins see and revoke them here (the
    revoke goes through the service, like the job shares')."""

    list_display = ["app", "grantee_user", "grantee_project", "created_by", "created"]
    search_fields = ["app__app_id", "grantee_user__username", "grantee_project__name"]
    list_select_related = ["app", "grantee_user", "grantee_project", "created_by"]
    readonly_fields = ["app", "grantee_user", "grantee_project", "created_by", "created"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def delete_model(self, request, obj):
        app_share_revoke(share=obj, user=request.user)

    def delete_queryset(self, request, queryset):
        for share in queryset.select_related("app"):
            app_share_revoke(share=share, user=request.user)


@admin.register(TapisToken)
class TapisTokenAdmin(admin.ModelAdmin):
    """Tapis tokens are issued by ``manage.py tapis_token``; admins see and revoke (delete)
    them here. Only a digest is stored: nothing here shows a usable key."""

    list_display = ["prefix", "user", "name", "created", "last_used"]
    search_fields = ["user__username", "prefix", "name"]
    list_select_related = ["user"]
    readonly_fields = ["user", "name", "prefix", "created", "last_used"]
    exclude = ["digest"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(HiddenJob)
class HiddenJobAdmin(admin.ModelAdmin):
    """Jobs hidden from Tapis' lists by hideJob; deleting a row shows the job there again."""

    list_display = ["job", "hidden_by", "hidden_at"]
    search_fields = ["job__uuid", "job__name", "hidden_by__username"]
    list_select_related = ["job", "hidden_by"]
    readonly_fields = ["job", "hidden_by", "hidden_at"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(JobUserEvent)
class JobUserEventAdmin(admin.ModelAdmin):
    """The detail and sender of each sendEvent (the event itself is in the job's history)."""

    list_display = ["event", "detail", "sender"]
    search_fields = ["detail", "sender__username"]
    list_select_related = ["event", "sender"]
    readonly_fields = ["event", "detail", "sender"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False  # the history is append-only
