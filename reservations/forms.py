"""The admins' reservation form (times in UTC)."""

from django import forms
from django.contrib.auth import get_user_model

from clusters.models import Gpu, Slave
from portal.models import Project
from reservations.models import Reservation

UTC_INPUT_FORMAT = "%Y-%m-%dT%H:%M"


class UtcDateTimeInput(forms.DateTimeInput):
    input_type = "datetime-local"

    def __init__(self, **kwargs):
        super().__init__(format=UTC_INPUT_FORMAT, **kwargs)


class ReservationForm(forms.ModelForm):
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

    def clean(self):
        data = super().clean()
        start, end, cluster = data.get("start"), data.get("end"), data.get("cluster")
        if start and end and end <= start:
            self.add_error("end", "must be after the start")
        slaves = list(data.get("slaves") or [])
        if cluster is not None:
            strangers = [s.name for s in slaves if s.cluster_id != cluster.pk]
            if strangers:
                self.add_error(
                    "slaves", f"not in cluster {cluster.pk}: {', '.join(sorted(strangers))}"
                )
            gpu_count = data.get("gpu_count")
            if gpu_count is not None and not strangers:
                gpus = Gpu.objects.filter(acquired=True)
                gpus = (
                    gpus.filter(slave__in=slaves) if slaves else gpus.filter(slave__cluster=cluster)
                )
                available = gpus.count()
                if gpu_count > available:
                    self.add_error(
                        "gpu_count", f"those slaves have only {available} GPU(s) for jobs"
                    )
                if gpu_count == 0:
                    self.add_error("gpu_count", "must be at least 1 (empty: every GPU)")
        return data
