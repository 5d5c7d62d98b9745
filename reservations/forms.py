"""The admins' reservation form (times in UTC)."""

from django import forms
from django.contrib.auth import get_user_model

from accounts.models import Project
from clusters.models import Slave
from reservations.models import Reservation
from reservations.services import FIELDS, reservation_validate

UTC_INPUT_FORMAT = "%Y-%m-%dT%H:%M"


class UtcDateTimeInput(forms.DateTimeInput):
    input_type = "datetime-local"

    def __init__(self, **kwargs):
        super().__init__(format=UTC_INPUT_FORMAT, **kwargs)


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
            "start": "Start (UTC)",
            "end": "End (UTC)",
            "gpu_count": "GPU count",
            "users": "Entitled users",
            "projects": "Entitled projects",
        }
        widgets = {
            "start": UtcDateTimeInput(),
            "end": UtcDateTimeInput(),
            "description": forms.Textarea(attrs={"rows": 3}),
            "slaves": forms.SelectMultiple(attrs={"size": 6}),
            "projects": forms.SelectMultiple(attrs={"size": 6}),
            "users": forms.SelectMultiple(attrs={"size": 6}),
        }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["slaves"].queryset = Slave.objects.select_related("cluster").order_by(
            "cluster_id", "name"
        )
        self.fields["slaves"].label_from_instance = lambda s: f"{s.name} (cluster {s.cluster_id})"
        self.fields["projects"].queryset = Project.objects.order_by("name")
        self.fields["users"].queryset = get_user_model().objects.order_by("username")
        for name in ("start", "end"):
            self.fields[name].input_formats = [UTC_INPUT_FORMAT, "%Y-%m-%dT%H:%M:%S"]
