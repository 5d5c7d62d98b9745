from django.contrib import admin, messages

from clusters.models import CapabilityStamp, Cluster, Gpu, Slave
from clusters.services import slave_probe, slave_set_accepting


class GpuInline(admin.TabularInline):
    model = Gpu
    extra = 0
    fields = ["index", "model", "memory_mb", "uuid", "declared", "acquired"]


class SlaveInline(admin.TabularInline):
    model = Slave
    extra = 0
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
    inlines = [GpuInline]
    actions = ["probe_now", "accept_jobs", "stop_accepting_jobs"]

    @admin.action(description="Probe now (engine info and GPUs)")
    def probe_now(self, request, queryset):
        for slave in queryset:
            slave_probe(slave=slave, discover_gpus=True)
            level = messages.SUCCESS if slave.online else messages.WARNING
            state = "online" if slave.online else f"offline: {slave.offline_reason}"
            self.message_user(request, f"{slave.name}: {state}", level)

    @admin.action(description="Accept jobs")
    def accept_jobs(self, request, queryset):
        for slave in queryset:
            slave_set_accepting(slave=slave, accepting=True)

    @admin.action(description="Stop accepting jobs (drain)")
    def stop_accepting_jobs(self, request, queryset):
        for slave in queryset:
            slave_set_accepting(slave=slave, accepting=False)


@admin.register(Gpu)
class GpuAdmin(admin.ModelAdmin):
    list_display = ["slave", "index", "model", "memory_mb", "declared", "acquired"]
    list_filter = ["declared", "acquired", "slave__cluster"]
    search_fields = ["model", "uuid", "slave__name"]


@admin.register(CapabilityStamp)
class CapabilityStampAdmin(admin.ModelAdmin):
    """Read-only: changes whenever slaves, GPUs or clusters change (submit-check cache key)."""

    list_display = ["id", "stamp"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
