from django.contrib import admin, messages

from core.errors import ServiceError
from jobs.actions.registry import ACTIONS, JobAction
from jobs.models import (
    Job,
    JobDelivery,
    JobEvent,
    JobExplanation,
    JobPullSecret,
    JobSample,
    JobShare,
    SchedulerLease,
    SubmitIdempotencyKey,
    UserUsage,
)
from jobs.shares import job_share_revoke
from jobs.spec import redact_image


class JobEventInline(admin.TabularInline):
    model = JobEvent
    extra = 0
    can_delete = False
    fields = ["time", "type", "new_state", "message"]
    readonly_fields = fields

    def has_add_permission(self, request, obj=None):
        return False


def _apply(modeladmin, request, queryset, service, verb):
    done = 0
    for job in queryset:
        try:
            service(job=job, user=request.user)
            done += 1
        except ServiceError as error:
            modeladmin.message_user(request, f"{job.name} ({job.uuid}): {error}", messages.WARNING)
    modeladmin.message_user(request, f"{verb} {done} job(s)")


def _admin_action(action: JobAction):
    """The registry's action as a Django admin action on the selected jobs."""

    def run(modeladmin, request, queryset):
        _apply(modeladmin, request, queryset, action.run, action.admin_verb)

    run.__name__ = action.admin_name
    return admin.action(
        description=action.admin_description, permissions=[action.admin_permission]
    )(run)


@admin.register(Job)
class JobAdmin(admin.ModelAdmin):
    list_display = [
        "name",
        "uuid",
        "owner",
        "project",
        "status",
        "gpus",
        "cpus",
        "cpu_memory_gb",
        "slave",
        "created",
    ]
    # "Idle GPUs" (jobs/runtime/metrics.py): jobs whose GPUs stayed idle over the review window.
    list_filter = [
        "status",
        "project",
        "slave__cluster",
        "interactive",
        "restartable",
        ("gpu_idle_flagged_at", admin.EmptyFieldListFilter),
    ]
    search_fields = ["name", "uuid", "owner__username", "project__name", "container_id"]
    date_hierarchy = "created"
    list_select_related = ["owner", "project", "slave"]
    # Status only ever changes through the services (actions below), never by editing the row.
    readonly_fields = [f.name for f in Job._meta.fields]
    inlines = [JobEventInline]
    actions = [_admin_action(a) for a in ACTIONS.values() if a.admin_name]

    def has_add_permission(self, request):
        return False


@admin.register(JobEvent)
class JobEventAdmin(admin.ModelAdmin):
    list_display = ["time", "job", "type", "new_state", "message"]
    list_filter = ["type", "new_state"]
    search_fields = ["job__uuid", "job__name", "message"]
    list_select_related = ["job"]

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(UserUsage)
class UserUsageAdmin(admin.ModelAdmin):
    list_display = ["user", "value", "updated_at"]
    search_fields = ["user__username"]
    ordering = ["-value"]


@admin.register(JobPullSecret)
class JobPullSecretAdmin(admin.ModelAdmin):
    """Shows which jobs carry registry credentials; the password itself is never displayed."""

    list_display = ["job", "image_redacted"]
    search_fields = ["job__uuid", "job__name"]
    fields = ["job", "image_redacted"]
    readonly_fields = fields

    @admin.display(description="image")
    def image_redacted(self, obj):
        return redact_image(obj.image, member=True)

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(SchedulerLease)
class SchedulerLeaseAdmin(admin.ModelAdmin):
    """Who holds the scheduler tick now, and how long the last tick took."""

    list_display = ["holder", "acquired_at", "rerun_requested", "last_tick_at", "last_tick_seconds"]
    readonly_fields = list_display

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(SubmitIdempotencyKey)
class SubmitIdempotencyKeyAdmin(admin.ModelAdmin):
    """Read-only: which submission a client's Idempotency-Key stands for."""

    list_display = ["key", "user", "job", "response_status", "created"]
    list_select_related = ["user", "job"]
    search_fields = ["key", "user__username"]
    readonly_fields = [f.name for f in SubmitIdempotencyKey._meta.fields]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(JobExplanation)
class JobExplanationAdmin(admin.ModelAdmin):
    """Read-only: why a queued job waits, as the scheduler's last tick wrote it."""

    list_display = ["job", "lines"]
    list_select_related = ["job"]
    search_fields = ["job__uuid", "job__name"]
    readonly_fields = ["job", "lines"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(JobSample)
class JobSampleAdmin(admin.ModelAdmin):
    """Read-only: resource samples of running jobs (jobs/runtime/metrics.py)."""

    list_display = ["time", "job", "cpu_percent", "memory_mb", "net_rx_kbps", "net_tx_kbps"]
    list_select_related = ["job"]
    search_fields = ["job__uuid", "job__name"]
    readonly_fields = [f.name for f in JobSample._meta.fields]


@admin.register(JobShare)
class JobShareAdmin(admin.ModelAdmin):
    """Shares are made by jobs' owners (job page, API); admins see and revoke them here (the
    revoke goes through the service: it is recorded in the job's history)."""

    list_display = ["job", "grantee_user", "grantee_project", "created_by", "created"]
    search_fields = ["job__uuid", "job__name", "grantee_user__username", "grantee_project__name"]
    list_select_related = ["job", "grantee_user", "grantee_project", "created_by"]
    readonly_fields = ["job", "grantee_user", "grantee_project", "created_by", "created"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def delete_model(self, request, obj):
        job_share_revoke(share=obj, user=request.user)

    def delete_queryset(self, request, queryset):
        for share in queryset.select_related("job", "grantee_user", "grantee_project"):
            job_share_revoke(share=share, user=request.user)


@admin.register(JobDelivery)
class JobDeliveryAdmin(admin.ModelAdmin):
    list_display = ["time", "job", "event", "method", "address", "attempt", "ok", "status_code"]
    list_filter = ["ok", "method", "event"]
    search_fields = ["job__uuid", "job__name", "address", "delivery_id"]
    list_select_related = ["job"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
