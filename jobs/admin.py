from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.contrib.admin.actions import delete_selected
from django.http import HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html, format_html_join

# django-q2's own admin registers its tables; imported first so they can be re-registered below.
from django_q import admin as q_admin
from django_q.models import Failure, OrmQ, Schedule, Success

from accounts.permissions import SuperuserOnlyAdmin
from clusters.admin import SlaveAdmin
from clusters.models import Slave
from core.errors import ServiceError
from core.templatetags.portal_ui import usertime
from jobs.models import (
    Job,
    JobEvent,
    JobExplanation,
    JobPullSecret,
    JobSample,
    JobShare,
    SchedulerLease,
    SlaveEventCursor,
    StartEstimate,
    SubmitIdempotencyKey,
    UserUsage,
)
from jobs.spec import redact_image
from jobs.states import HOLDS_RESOURCES
from jobs.user_actions.registry import ACTIONS, JobAction
from jobs.user_actions.services import job_delete
from jobs.user_actions.shares import job_share_revoke


class JobEventInline(admin.TabularInline):
    model = JobEvent
    extra = 0
    can_delete = False
    # One tuple for both: django-stubs types the two as lists of different items.
    fields = readonly_fields = ("time", "type", "new_state", "message")

    def has_add_permission(self, request, obj=None):
        return False


def _apply(modeladmin, request, queryset, service, verb, **kwargs):
    """Run a job service on each selected job; one message per refusal and one for the rest."""
    done = 0
    for job in queryset:
        try:
            service(job=job, user=request.user, **kwargs)
            done += 1
        except ServiceError as error:
            modeladmin.message_user(request, f"{job.name} ({job.uuid}): {error}", messages.WARNING)
    level = messages.SUCCESS if done else messages.WARNING
    modeladmin.message_user(request, f"{verb} {done} of {len(queryset)} job(s).", level)


def _confirmed(request) -> bool:
    return request.POST.get("post") == "yes"


def _confirmation(modeladmin, request, queryset, *, action, title, does, on_running):
    """The intermediate page of a destructive bulk action: what it will do to each job, and a
    warning naming the jobs it hits that hold a slave's resources (running, starting, ...)."""
    jobs = list(queryset.select_related("owner", "project", "slave").order_by("-created", "-id"))
    running = [job for job in jobs if job.status in HOLDS_RESOURCES]
    context = {
        **modeladmin.admin_site.each_context(request),
        "title": title,
        "subtitle": None,
        "opts": modeladmin.model._meta,
        "jobs": jobs,
        "running": running,
        "does": does,
        "on_running": on_running,
        "action": action,
        "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
        "media": modeladmin.media,
    }
    request.current_app = modeladmin.admin_site.name
    return TemplateResponse(request, "admin/jobs/job/action_confirmation.html", context)


# The registry's admin actions that destroy something ask first (action name -> the page's title,
# what it does, what it does to jobs that hold a slave's resources).
CONFIRMED_ACTIONS = {
    "cancel": (
        "Cancel jobs",
        "Queued and held jobs end at once (CANCELLED); jobs on a slave are stopped.",
        "their containers are stopped: the work in them is lost",
    ),
    "delete": (
        "Hide jobs",
        "Ended jobs are hidden (DELETED); their history is kept.",
        "they are refused: cancel them first",
    ),
}


def _admin_action(action: JobAction):
    """The registry's action as a Django admin action on the selected jobs (after a
    confirmation page for the destructive ones)."""

    def run(modeladmin, request, queryset):
        if action.name in CONFIRMED_ACTIONS and not _confirmed(request):
            title, does, on_running = CONFIRMED_ACTIONS[action.name]
            return _confirmation(
                modeladmin,
                request,
                queryset,
                action=action.admin_name,
                title=title,
                does=does,
                on_running=on_running,
            )
        _apply(modeladmin, request, queryset, action.run, action.admin_verb)

    assert action.admin_name is not None  # only the registry's admin actions come here
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
        "portal_page",
    ]
    # "Idle GPUs" (jobs/execution/metrics.py): jobs whose GPUs stayed idle over the review window.
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
    readonly_fields = [
        "event_times_shown" if f.name == "event_times" else f.name for f in Job._meta.fields
    ]
    exclude = ["event_times"]  # shown as event_times_shown (read-only like the rest)
    inlines = [JobEventInline]
    actions = [_admin_action(a) for a in ACTIONS.values() if a.admin_name] + ["hard_delete"]
    delete_confirmation_template = "admin/jobs/job/delete_confirmation.html"

    def view_on_site(self, obj):
        return reverse("jobs:detail", args=[obj.uuid])

    @admin.display(description="event times")
    def event_times_shown(self, obj):
        # The column holds the API's UTC strings: shown in the viewer's zone with its name, to
        # the second, like every other time of the admin (the one time rule).
        return format_html_join(
            "",
            "<div>{}: {}</div>",
            ((k, usertime(v, "seconds")) for k, v in obj.event_times.items()),
        )

    @admin.display(description="portal")
    def portal_page(self, obj):
        return format_html('<a href="{}">job page</a>', reverse("jobs:detail", args=[obj.uuid]))

    def has_add_permission(self, request):
        return False

    def get_actions(self, request):
        # Django's generic "Delete selected" removes rows under running containers without a
        # word: hard_delete below goes through job_delete and warns first.
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)
        return actions

    @admin.action(
        description="Remove selected jobs for good (rows and events)", permissions=["delete"]
    )
    def hard_delete(self, request, queryset):
        if not _confirmed(request):
            return _confirmation(
                self,
                request,
                queryset,
                action="hard_delete",
                title="Remove jobs for good",
                does="The jobs' rows and events are removed from the database; this cannot be "
                "undone.",
                on_running="they are cancelled and removed at once (their containers are "
                "stopped and removed; the work in them is lost)",
            )
        # History: the rows about to go (job_delete with real and force removes every one, a
        # job on a slave after cancelling it: the same as gpulab-cli rm --real --force).
        self.log_deletions(request, queryset)
        _apply(self, request, queryset, job_delete, "Removed", real=True, force=True)

    def get_deleted_objects(self, objs, request):
        # The delete page below shows the job's state, not every one of its events.
        deleted, model_count, perms_needed, protected = super().get_deleted_objects(objs, request)
        return [], model_count, perms_needed, protected

    def render_delete_form(self, request, context):
        job = context.get("object")
        context["running"] = job is not None and job.status in HOLDS_RESOURCES
        return super().render_delete_form(request, context)

    def delete_model(self, request, obj):
        # Through the service: a job on a slave is cancelled (its container stopped by the
        # reconcile pass), never just forgotten.
        try:
            job_delete(job=obj, user=request.user, real=True, force=True)
        except ServiceError as error:
            request._job_delete_refused = str(error)

    def response_delete(self, request, obj_display, obj_id):
        refused = getattr(request, "_job_delete_refused", None)
        if refused is None:
            return super().response_delete(request, obj_display, obj_id)
        self.message_user(request, f"{obj_display}: {refused}", messages.WARNING)
        return HttpResponseRedirect(reverse("admin:jobs_job_change", args=[obj_id]))


@admin.register(JobEvent)
class JobEventAdmin(admin.ModelAdmin):
    list_display = ["time", "job", "type", "new_state", "message"]
    list_filter = ["type", "new_state"]
    search_fields = ["job__uuid", "job__name", "message"]
    list_select_related = ["job"]

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(UserUsage)
class UserUsageAdmin(SuperuserOnlyAdmin, admin.ModelAdmin):
    list_display = ["user", "value", "updated_at"]
    search_fields = ["user__username"]
    ordering = ["-value"]


@admin.register(JobPullSecret)
class JobPullSecretAdmin(SuperuserOnlyAdmin, admin.ModelAdmin):
    """Shows which jobs carry registry credentials; the password itself is never displayed."""

    list_display = ["job", "image_redacted"]
    search_fields = ["job__uuid", "job__name"]
    # One tuple for both: django-stubs types the two as lists of different items.
    fields = readonly_fields = ("job", "image_redacted")

    @admin.display(description="image")
    def image_redacted(self, obj):
        return redact_image(obj.image, member=True)

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(SchedulerLease)
class SchedulerLeaseAdmin(SuperuserOnlyAdmin, admin.ModelAdmin):
    """Who holds the scheduler tick now, and how long the last tick took."""

    # One tuple for both: django-stubs types the two as lists of different items.
    list_display = readonly_fields = (
        "holder",
        "acquired_at",
        "rerun_requested",
        "last_tick_at",
        "last_tick_seconds",
    )

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(SlaveEventCursor)
class SlaveEventCursorAdmin(SuperuserOnlyAdmin, admin.ModelAdmin):
    """Read-only: per slave, the last Docker event the watcher handled (where it resumes)."""

    # One tuple for both: django-stubs types the two as lists of different items.
    list_display = readonly_fields = ("slave", "event_time")
    list_select_related = ["slave"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(SubmitIdempotencyKey)
class SubmitIdempotencyKeyAdmin(SuperuserOnlyAdmin, admin.ModelAdmin):
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
class JobExplanationAdmin(SuperuserOnlyAdmin, admin.ModelAdmin):
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
class JobSampleAdmin(SuperuserOnlyAdmin, admin.ModelAdmin):
    """Read-only: resource samples of running jobs (jobs/execution/metrics.py)."""

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


@admin.register(StartEstimate)
class StartEstimateAdmin(admin.ModelAdmin):
    """Read-only: the scheduler's start-time estimates (jobs/submit/estimates.py)."""

    list_display = ["job", "made_at", "first_start"]
    list_select_related = ["job"]
    search_fields = ["job__uuid", "job__name"]
    readonly_fields = [f.name for f in StartEstimate._meta.fields]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


# django-q2's task queue, results, failures and schedules: the site's operators only.
for _model, _admin in [
    (Schedule, q_admin.ScheduleAdmin),
    (Success, q_admin.TaskAdmin),
    (Failure, q_admin.FailAdmin),
    (OrmQ, q_admin.QueueAdmin),
]:
    if admin.site.is_registered(_model):  # (OrmQ only with the ORM broker)
        admin.site.unregister(_model)
        admin.site.register(_model, type(_admin.__name__, (SuperuserOnlyAdmin, _admin), {}))


class SlaveAdminWithJobs(SlaveAdmin):
    """The slave admin, whose delete pages warn about the jobs running on the slaves (the
    clusters app cannot read jobs: it sits below them)."""

    delete_confirmation_template = "admin/clusters/slave/delete_confirmation.html"
    delete_selected_confirmation_template = "admin/clusters/slave/delete_selected_confirmation.html"

    @staticmethod
    def running_on(slaves) -> list[Job]:
        return list(
            Job.objects.filter(slave__in=slaves, status__in=HOLDS_RESOURCES)
            .select_related("slave")
            .order_by("slave__name", "created")
        )

    def render_delete_form(self, request, context):
        context["running"] = self.running_on([context["object"]])
        context["running_slaves"] = [context["object"]]
        return super().render_delete_form(request, context)

    def get_actions(self, request):
        actions = super().get_actions(request)
        if "delete_selected" in actions:
            # (present: checked above; django-stubs types an entry as Optional)
            _function, name, description = actions["delete_selected"]  # type: ignore[misc]
            actions["delete_selected"] = (self.delete_with_warning, name, description)
        return actions

    @staticmethod
    def delete_with_warning(modeladmin, request, queryset):
        response = delete_selected(modeladmin, request, queryset)
        if response is not None:  # the confirmation page (rendered lazily)
            context = response.context_data
            assert context is not None  # a TemplateResponse's
            context["running"] = SlaveAdminWithJobs.running_on(queryset)
            context["running_slaves"] = list(queryset)
        return response


admin.site.unregister(Slave)
admin.site.register(Slave, SlaveAdminWithJobs)
