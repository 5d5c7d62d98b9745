"""Admin pages of directory sign-in: identities (an admin links a local account to its
directory entry by adding one), the audit trail of what the directory changed, and which
memberships the group mapping made."""

from django.contrib import admin, messages

from accounts.directory.sync import directory_identity_check
from accounts.models import DirectoryChange, DirectoryIdentity, DirectoryMembership


@admin.register(DirectoryIdentity)
class DirectoryIdentityAdmin(admin.ModelAdmin):
    list_display = ["user", "source", "subject", "last_checked", "disabled_at"]
    list_filter = ["source", ("disabled_at", admin.EmptyFieldListFilter)]
    list_select_related = ["user"]
    search_fields = ["user__username", "subject"]
    autocomplete_fields = ["user"]
    fields = ["user", "source", "subject", "groups", "last_checked", "disabled_at", "created"]
    readonly_fields = ["groups", "last_checked", "disabled_at", "created"]
    actions = ["check_now"]

    @admin.action(description="Ask the directory about the selected users now")
    def check_now(self, request, queryset):
        outcomes = [directory_identity_check(identity) for identity in queryset]
        summary = ", ".join(f"{outcomes.count(o)} {o}" for o in sorted(set(outcomes)))
        self.message_user(request, f"Checked: {summary or 'nobody'}.", messages.INFO)


@admin.register(DirectoryChange)
class DirectoryChangeAdmin(admin.ModelAdmin):
    """The audit trail: written by the sign-in service only, never edited."""

    list_display = ["at", "username", "action", "project_name", "trigger", "source", "detail"]
    list_filter = ["action", "trigger", "source"]
    search_fields = ["username", "project_name", "detail"]
    date_hierarchy = "at"

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(DirectoryMembership)
class DirectoryMembershipAdmin(admin.ModelAdmin):
    """Memberships the group mapping made (delete the membership itself to end one: the next
    sign-in or sync makes it again while the directory grants it)."""

    list_display = ["membership", "groups", "created"]
    list_select_related = ["membership__user", "membership__project"]
    search_fields = ["membership__user__username", "membership__project__name"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
