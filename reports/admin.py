"""The monthly e-mails sent, in the Django admin: read-only (deleting a row lets
``manage.py reports_mail`` send that project's month again without ``--force``)."""

from django.contrib import admin

from reports.models import MonthlyReportMail


@admin.register(MonthlyReportMail)
class MonthlyReportMailAdmin(admin.ModelAdmin):
    list_display = ("project", "month", "sent_at")
    list_filter = ("month",)
    search_fields = ("project__name",)
    list_select_related = ("project",)
    readonly_fields = ("project", "month", "sent_at", "recipients")

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
