from django.apps import AppConfig


class AccountsConfig(AppConfig):
    """Projects, memberships, profiles, login certificates, API tokens; directory sign-in."""

    name = "accounts"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Registers the sign-in settings' system check (models are loaded by now).
        from accounts.directory import checks  # noqa: F401
