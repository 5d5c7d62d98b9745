from django.apps import AppConfig


class InteractiveConfig(AppConfig):
    """Interactive sessions (JupyterLab, VS Code, TensorBoard) run as GPULab interactive jobs and
    reached only through the portal's session proxy (docs/sessions.md). One floor above jobs and
    notifications, a sibling of gangs, tapis and ssh."""

    name = "interactive"
    default_auto_field = "django.db.models.BigAutoField"
