from django.apps import AppConfig


class CoreConfig(AppConfig):
    """The shared kernel (errors, time formatting, tasks, API base view); an app for its
    template tags and for the process-wide fork hook. It imports no other app of the project."""

    name = "core"

    def ready(self) -> None:
        from core import forksafe

        # django-q2 and gunicorn fork: children must not share the parent's connections.
        forksafe.install()
