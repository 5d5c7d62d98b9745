from urllib.parse import urlencode

from django import forms
from django.contrib import admin, messages
from django.urls import reverse
from django.utils.html import format_html

from accounts.permissions import SuperuserOnlyAdmin
from clusters.engine_policy import insecure_tcp_problem
from clusters.models import CapabilityStamp, Cluster, Gpu, Slave
from clusters.services import slave_probe, slave_set_accepting


def live_slave_url(slave: Slave) -> str:
    """The slave's row on the portal's Live > Slaves page."""
    query = urlencode({"cluster": slave.cluster_id, "q": slave.name})
    return f"{reverse('live:slaves')}?{query}"


class SlaveAdminForm(forms.ModelForm):
    """The admin's slave form (ModelAdmin supplies model and fields)."""

    def clean(self):
        data = super().clean()
        assert data is not None  # a ModelForm's clean() returns cleaned_data
        problem = insecure_tcp_problem(
            docker_url=data.get("docker_url") or "",
            tls_ca=data.get("tls_ca") or "",
            tls_cert=data.get("tls_cert") or "",
            tls_key=data.get("tls_key") or "",
        )
        if problem:
            self.add_error("docker_url", problem)
        return data


class GpuInline(admin.TabularInline):
    model = Gpu
    extra = 0
    fields = ["index", "model", "memory_mb", "uuid", "declared", "acquired"]


class SlaveInline(admin.TabularInline):
    model = Slave
    extra = 0
    form = SlaveAdminForm
    fields = ["name", "docker_url", "online", "accepting_jobs"]
    readonly_fields = ["online"]
    show_change_link = True


@admin.register(Cluster)
class ClusterAdmin(admin.ModelAdmin):
    list_display = ["id", "comment", "is_private", "deployment_environment"]
    list_filter = ["is_private", "deployment_environment"]
    search_fields = ["comment"]
    filter_horizontal = ["owner_projects"]
    inlines = [SlaveInline]


@admin.register(Slave)
class SlaveAdmin(admin.ModelAdmin):
    list_display = [
        "name",
        "cluster",
        "online",
        "accepting_jobs",
        "gpu_mode",
        "cpus_total",
        "memory_total_mb",
        "cuda_version",
        "last_seen",
        "offline_reason",
        "portal_page",
    ]
    list_filter = ["cluster", "online", "accepting_jobs", "gpu_mode"]
    search_fields = ["name", "host", "docker_url", "comment"]
    readonly_fields = [
        "online",
        "offline_reason",
        "last_seen",
        "offline_since",
        "cpus_total",
        "memory_total_mb",
        "cpu_model",
        "docker_version",
        "cuda_version",
        "instance_id",
        "created",
    ]
    form = SlaveAdminForm
    inlines = [GpuInline]
    actions = ["probe_now", "accept_jobs", "stop_accepting_jobs"]

    def view_on_site(self, obj):
        return live_slave_url(obj)

    @admin.display(description="portal")
    def portal_page(self, obj):
        return format_html('<a href="{}">live page</a>', live_slave_url(obj))

    @admin.action(description="Probe now (engine info and GPUs)")
    def probe_now(self, request, queryset):
        for slave in queryset:
            slave_probe(slave=slave, discover_gpus=True)
            level = messages.SUCCESS if slave.online else messages.WARNING
            state = "online" if slave.online else f"offline: {slave.offline_reason}"
            self.message_user(request, f"{slave.name}: {state}", level)

    @admin.action(description="Accept jobs")
    def accept_jobs(self, request, queryset):
        names = []
        for slave in queryset:
            slave_set_accepting(slave=slave, accepting=True)
            names.append(slave.name)
        self.message_user(
            request, f"Accepting jobs again: {', '.join(names) or 'no slave'}.", messages.SUCCESS
        )

    @admin.action(description="Stop accepting jobs (drain)")
    def stop_accepting_jobs(self, request, queryset):
        for slave in queryset:
            slave_set_accepting(slave=slave, accepting=False)
            self.message_user(
                request,
                f"{slave.name} drained: no new jobs start there; "
                "the jobs on it keep running until they end.",
                messages.SUCCESS,
            )


@admin.register(Gpu)
class GpuAdmin(admin.ModelAdmin):
    list_display = ["slave", "index", "model", "memory_mb", "declared", "acquired"]
    list_filter = ["declared", "acquired", "slave__cluster"]
    search_fields = ["model", "uuid", "slave__name"]


@admin.register(CapabilityStamp)
class CapabilityStampAdmin(SuperuserOnlyAdmin, admin.ModelAdmin):
    """Read-only: changes whenever slaves, GPUs or clusters change (submit-check cache key)."""

    list_display = ["id", "stamp"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
