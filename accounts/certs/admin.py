"""Admin for login certificates (registered from accounts/admin.py): list, search, revoke."""

from django.contrib import admin, messages
from django.utils import timezone

from accounts.certs.services import login_certificate_revoke
from accounts.models import LoginCertificate


@admin.register(LoginCertificate)
class LoginCertificateAdmin(admin.ModelAdmin):
    list_display = ["serial", "user", "created", "not_after", "revoked_at", "state"]
    list_filter = [("revoked_at", admin.EmptyFieldListFilter), "not_after"]
    search_fields = ["user__username", "serial", "fingerprint"]
    readonly_fields = ["user", "serial", "fingerprint", "not_before", "not_after", "created"]
    fields = [*readonly_fields, "revoked_at"]
    actions = ["revoke"]
    list_select_related = ["user"]

    def has_add_permission(self, request):
        return False  # certificates come from the CA (the user's "Login certificates" page)

    @admin.display(description="state")
    def state(self, obj):
        return obj.state_at(timezone.now())

    @admin.action(description="Revoke the selected certificates")
    def revoke(self, request, queryset):
        now = timezone.now()
        for certificate in queryset.filter(revoked_at__isnull=True):
            login_certificate_revoke(certificate=certificate, user=request.user, now=now)
        messages.success(request, "Revoked.")
