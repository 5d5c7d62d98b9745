from django.contrib import admin

from portal.models import Membership, Profile, Project


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 1
    autocomplete_fields = ["user"]


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    list_display = ["name", "gid", "member_count", "created"]
    search_fields = ["name", "description"]
    readonly_fields = ["urn", "created"]
    inlines = [MembershipInline]

    @admin.display(description="members")
    def member_count(self, obj):
        return obj.memberships.count()

    def get_queryset(self, request):
        from django.db.models import Count

        return super().get_queryset(request).annotate(_members=Count("memberships"))


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ["user", "project", "role", "created"]
    list_filter = ["role", "project"]
    search_fields = ["user__username", "project__name"]
    autocomplete_fields = ["user", "project"]


@admin.register(Profile)
class ProfileAdmin(admin.ModelAdmin):
    list_display = ["user"]
    search_fields = ["user__username"]


# Login certificates for gpulab-cli (portal/certs/admin.py).
import portal.certs.admin  # noqa: E402, F401
