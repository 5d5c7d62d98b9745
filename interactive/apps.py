from django.apps import AppConfig


class InteractiveConfig(AppConfig):
    """Interactive sessions (JupyterLab, VS Code, TensorBoard) run as GPULab interactive jobs and
    reached only through the portal's session proxy (docs/sessions.md). One floor above jobs and
    notifications, a sibling of gangs, tapis and ssh."""

    name = "interactive"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Imported here: the hooks use models, which exist only once apps are ready. The
        # proxy's checks module registers its settings check (a proxy on the portal's own
        # origin is refused).
        from interactive.hooks import interactive_connect
        from interactive.proxy import checks  # noqa: F401

        interactive_connect()
