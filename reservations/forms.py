"""The admins' reservation form: start and end typed in the user's zone (the one activated by
accounts.timezones), as explicit ISO text ``2026-11-22 14:00``, never a locale date picker."""

from datetime import datetime, timedelta
from typing import cast

from django import forms
from django.contrib.auth import get_user_model
from django.utils import timezone

from accounts.models import Project
from clusters.models import Slave
from reservations.models import Reservation
from reservations.services import FIELDS, reservation_validate

ISO_INPUT_FORMAT = "%Y-%m-%d %H:%M"
INPUT_FORMATS = [ISO_INPUT_FORMAT, "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S"]


class IsoDateTimeInput(forms.DateTimeInput):
    """Plain text in the user's zone: ``YYYY-MM-DD HH:MM`` (24-hour)."""

    input_type = "text"

    def __init__(self, **kwargs):
        attrs = {
            "placeholder": "YYYY-MM-DD HH:MM",
            "pattern": r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(:\d{2})?",
            "inputmode": "numeric",
            "autocomplete": "off",
            "class": "font-monospace",
        }
        super().__init__(format=ISO_INPUT_FORMAT, attrs=attrs | kwargs.pop("attrs", {}), **kwargs)


def default_window(now: datetime) -> tuple[datetime, datetime]:
    """A new reservation's default: from the next full hour, one hour long."""
    start = now.replace(minute=0, second=0, microsecond=0) + timedelta(hours=1)
    return start, start + timedelta(hours=1)


class ValidatedReservationForm(forms.ModelForm):
    """A reservation ModelForm whose clean() is ``reservation_validate`` (the web form and the
    admin both use it; the API calls the same function)."""

    class Meta:
        model = Reservation
        fields = [
            "name",
            "description",
            "cluster",
            "slaves",
            "gpu_count",
            "start",
            "end",
            "projects",
            "users",
        ]

    def clean(self):
        data = super().clean()
        assert data is not None  # a ModelForm's clean() returns cleaned_data
        given = {name: data[name] for name in FIELDS if name in data}
        instance = self.instance if self.instance.pk else None
        for field, rule in reservation_validate(data=given, instance=instance):
            if field in self.errors:
                continue  # already refused by the field itself
            self.add_error(field if field in self.fields else None, rule)
        return data


class ReservationForm(ValidatedReservationForm):
    class Meta(ValidatedReservationForm.Meta):
        labels = {
            "gpu_count": "GPU count",
            "users": "Entitled users",
            "projects": "Entitled projects",
        }
        widgets = {
            "start": IsoDateTimeInput(),
            "end": IsoDateTimeInput(),
            "description": forms.Textarea(attrs={"rows": 3}),
            "slaves": forms.SelectMultiple(attrs={"size": 6}),
            "projects": forms.SelectMultiple(attrs={"size": 6}),
            "users": forms.SelectMultiple(attrs={"size": 6}),
        }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # The fields the model's many-to-many and datetime fields get.
        slaves = cast(forms.ModelMultipleChoiceField, self.fields["slaves"])
        slaves.queryset = Slave.objects.select_related("cluster").order_by("cluster_id", "name")
        # Django's documented way to label the choices (stubs see a method).
        slaves.label_from_instance = lambda obj: f"{obj.name} (cluster {obj.cluster_id})"  # type: ignore[method-assign]
        cast(
            forms.ModelMultipleChoiceField, self.fields["projects"]
        ).queryset = Project.objects.order_by("name")
        cast(
            forms.ModelMultipleChoiceField, self.fields["users"]
        ).queryset = get_user_model().objects.order_by("username")
        zone = timezone.get_current_timezone_name()
        for name in ("start", "end"):
            cast(forms.DateTimeField, self.fields[name]).input_formats = INPUT_FORMATS
            self.fields[name].label = f"{name.capitalize()} ({zone})"
            self.fields[name].help_text = f"YYYY-MM-DD HH:MM, 24-hour, in {zone}."
