"""Quotas in the Django admin: an admin sets each project's, user's and member's limits."""

from django.contrib import admin

from quotas.models import Quota


@admin.register(Quota)
class QuotaAdmin(admin.ModelAdmin):
    list_display = (
        "__str__",
        "gpus_hard",
        "jobs_hard",
        "gpu_hours_hard",
        "gpu_hours_soft",
        "updated",
    )
    list_filter = (("project", admin.RelatedOnlyFieldListFilter),)
    search_fields = ("project__name", "user__username", "comment")
    autocomplete_fields = ("user",)
    list_select_related = ("project", "user")
    fieldsets = (
        (None, {"fields": ("project", "user", "comment")}),
        ("At once", {"fields": (("gpus_hard", "gpus_soft"), ("jobs_hard", "jobs_soft"))}),
        (
            "Per calendar month (UTC)",
            {
                "fields": (
                    ("gpu_hours_hard", "gpu_hours_soft"),
                    ("cpu_hours_hard", "cpu_hours_soft"),
                    ("mem_gb_hours_hard", "mem_gb_hours_soft"),
                )
            },
        ),
    )
