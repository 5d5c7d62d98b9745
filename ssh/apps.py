from django.apps import AppConfig


class SshConfig(AppConfig):
    """The SSH gateway into running jobs (``manage.py ssh_gateway``), one floor above jobs
    (docs/ssh.md). No models: it reads jobs, keys and login certificates."""

    name = "ssh"
    default_auto_field = "django.db.models.BigAutoField"
