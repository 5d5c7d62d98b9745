from django.apps import AppConfig


class CoreConfig(AppConfig):
    """The shared kernel (errors, time formatting, tasks, API base view); an app only for its
    template tags. It imports no other app of the project."""

    name = "core"
