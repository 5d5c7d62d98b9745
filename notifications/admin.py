from django.contrib import admin

from notifications.models import JobDelivery, JobSubscription


@admin.register(JobDelivery)
class JobDeliveryAdmin(admin.ModelAdmin):
    """Read-only: every delivery attempt of every job's subscriptions."""

    list_display = ["time", "job", "event", "method", "address", "attempt", "ok", "status_code"]
    list_filter = ["ok", "method", "event"]
    search_fields = ["job__uuid", "job__name", "address", "delivery_id"]
    list_select_related = ["job"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(JobSubscription)
class JobSubscriptionAdmin(admin.ModelAdmin):
    """Read-only: the subscriptions apps made apart from jobs' requests (Tapis' subscribe)."""

    list_display = ["created", "job", "origin", "type_filter", "owner", "enabled", "expires_at"]
    list_filter = ["origin", "enabled"]
    search_fields = ["uuid", "job__uuid", "job__name", "owner__username"]
    list_select_related = ["job", "owner"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
