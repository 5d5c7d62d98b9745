from django.contrib import admin
from django.urls import reverse
from django.utils import timezone

from reservations.forms import ValidatedReservationForm
from reservations.models import Reservation
from reservations.services import reservation_changed


class ReservationStateFilter(admin.SimpleListFilter):
    title = "when"
    parameter_name = "when"

    def lookups(self, request, model_admin):
        return [("active", "Active now"), ("upcoming", "Upcoming"), ("past", "Past")]

    def queryset(self, request, queryset):
        now = timezone.now()
        if self.value() == "active":
            return queryset.filter(start__lte=now, end__gt=now)
        if self.value() == "upcoming":
            return queryset.filter(start__gt=now)
        if self.value() == "past":
            return queryset.filter(end__lte=now)
        return queryset


@admin.register(Reservation)
class ReservationAdmin(admin.ModelAdmin):
    # reservation_validate in clean(): the admin refuses what the form and the API refuse. The
    # admin's change view runs in a transaction, so the check locks the cluster's row like the
    # services do and nothing is written when it refuses.
    form = ValidatedReservationForm
    list_display = ["name", "cluster", "start", "end", "gpu_count", "uuid"]
    list_filter = [ReservationStateFilter, "cluster"]
    search_fields = ["name", "description", "uuid"]
    filter_horizontal = ["slaves", "projects", "users"]
    readonly_fields = ["uuid", "created", "created_by"]

    def view_on_site(self, obj):
        return reverse("reservations:detail", args=[obj.uuid])

    def save_model(self, request, obj, form, change):
        if not change:
            obj.created_by = request.user
        super().save_model(request, obj, form, change)

    def save_related(self, request, form, formsets, change):
        super().save_related(request, form, formsets, change)
        # A reservation changes what the scheduler may do: ask for a tick (service, not save()).
        reservation_changed(reservation=form.instance)

    def delete_model(self, request, obj):
        super().delete_model(request, obj)
        reservation_changed(reservation=None)
