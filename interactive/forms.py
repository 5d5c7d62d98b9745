"""The "New session" form of the sessions page."""

from __future__ import annotations

from django import forms

from accounts.models import Project
from accounts.selectors import projects_of
from interactive.models import SessionTemplate


class SessionStartForm(forms.Form):
    template = forms.ModelChoiceField(
        queryset=SessionTemplate.objects.none(), to_field_name="slug", empty_label=None
    )
    project: forms.ModelChoiceField = forms.ModelChoiceField(
        queryset=Project.objects.none(), to_field_name="name", empty_label=None
    )
    gpus = forms.IntegerField(
        label="GPUs", min_value=0, required=False, help_text="Empty: the template's."
    )
    hours = forms.FloatField(
        min_value=0.02, required=False, help_text="Empty: the template's time box."
    )
    open_to_project = forms.BooleanField(
        label="Share with my project", required=False, help_text="Its members may open it too."
    )
    logdir = forms.CharField(
        label="TensorBoard folder",
        required=False,
        max_length=500,
        help_text="TensorBoard only: the folder it reads, in /project.",
    )

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, **kwargs)
        template_field = self.fields["template"]
        project_field = self.fields["project"]
        assert isinstance(template_field, forms.ModelChoiceField)
        assert isinstance(project_field, forms.ModelChoiceField)
        template_field.queryset = SessionTemplate.objects.filter(enabled=True)
        project_field.queryset = projects_of(user)
