from django.contrib import admin

from gangs.models import JobGang


@admin.register(JobGang)
class JobGangAdmin(admin.ModelAdmin):
    """Read-only: multi-task OpenPAI jobs; act on them through any of their tasks (Jobs), which
    acts on the whole gang (jobs/user_actions/registry.py, filled by gangs/hooks.py)."""

    list_display = ["name", "owner", "project", "status", "attempt", "retry_count", "created"]
    list_filter = ["status"]
    list_select_related = ["owner", "project"]
    search_fields = ["uuid", "name", "owner__username"]
    readonly_fields = [f.name for f in JobGang._meta.fields]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
