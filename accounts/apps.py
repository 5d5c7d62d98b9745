from django.apps import AppConfig


class AccountsConfig(AppConfig):
    """Projects, memberships, profiles, login certificates and API tokens."""

    name = "accounts"
    default_auto_field = "django.db.models.BigAutoField"
