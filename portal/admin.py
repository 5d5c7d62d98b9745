from django.contrib import admin

from portal.models import ApiToken, Membership, Profile, Project


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


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """Tokens by prefix only: the key is stored as a hash and the digest is not shown either.

    Admins can see who has a token and when it was last used, and revoke one (delete); they
    cannot create one here (a key must reach its owner once: ``manage.py token_create``).
    """

    list_display = ["prefix_shown", "user", "name", "created", "last_used"]
    list_select_related = ["user"]
    search_fields = ["user__username", "prefix"]
    fields = ["user", "name", "prefix_shown", "created", "last_used"]
    readonly_fields = fields

    @admin.display(description="token")
    def prefix_shown(self, obj):
        return f"{obj.prefix}…"

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


# Login certificates for gpulab-cli (portal/certs/admin.py).
import portal.certs.admin  # noqa: E402, F401
