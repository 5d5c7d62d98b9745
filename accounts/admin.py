from django import forms
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin
from django.contrib.auth.forms import UserChangeForm, UserCreationForm

from accounts.emails import email_problem
from accounts.models import ApiToken, Membership, Profile, Project

User = get_user_model()


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


def _clean_email(form) -> str:
    address = form.cleaned_data.get("email") or ""
    problem = email_problem(address) if address else None
    if problem:
        raise forms.ValidationError(f"gpulab-cli would reject this address: {problem}")
    return address


class PortalUserCreationForm(UserCreationForm):
    class Meta(UserCreationForm.Meta):  # type: ignore[name-defined]  # not in django-stubs
        fields = ("username", "email")

    clean_email = _clean_email


class PortalUserChangeForm(UserChangeForm):
    clean_email = _clean_email


class UserMembershipInline(admin.TabularInline):
    """A researcher's projects, editable on the user's own page (one screen, not two)."""

    model = Membership
    fk_name = "user"
    extra = 1
    autocomplete_fields = ["project"]


admin.site.unregister(User)


@admin.register(User)
class PortalUserAdmin(UserAdmin):
    form = PortalUserChangeForm
    add_form = PortalUserCreationForm
    add_fieldsets = (
        (None, {"classes": ("wide",), "fields": ("username", "email", "password1", "password2")}),
    )
    inlines = [UserMembershipInline]
    # Set by Django on sign-in and creation, never by hand.
    readonly_fields = ["last_login", "date_joined"]


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """Tokens by prefix only: the key is stored as a hash and the digest is not shown either.

    Admins can see who has a token and when it was last used, and revoke one (delete); they
    cannot create one here (a key must reach its owner once: ``manage.py token_create``).
    """

    list_display = ["prefix_shown", "user", "name", "created", "last_used"]
    list_select_related = ["user"]
    search_fields = ["user__username", "prefix"]
    # One tuple for both: django-stubs types the two as lists of different items.
    fields = readonly_fields = ("user", "name", "prefix_shown", "created", "last_used")

    @admin.display(description="token")
    def prefix_shown(self, obj):
        return f"{obj.prefix}…"

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


# Login certificates for gpulab-cli (accounts/certs/admin.py).
import accounts.certs.admin  # noqa: E402, F401

# Directory sign-in: identities, the audit trail, mapped memberships (accounts/directory/admin.py).
import accounts.directory.admin  # noqa: E402, F401
